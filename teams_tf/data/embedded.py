"""Resolves `sample:` paths to the corpus and vocabulary shipped with the package.

`teams_tf/data/sample/` holds a small English Wikipedia corpus (`train.txt`, `valid.txt`) and a
WordPiece vocabulary learned from it (`vocab.txt`); `SOURCE.md` there gives their provenance and
license. Configs refer to them as `sample:train`, `sample:valid` and `sample:vocab`, so a default
experiment runs from a fresh install with no data download.
"""

import os

SCHEME = 'sample:'

_SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sample')
_SAMPLE_FILES = {
    'train': 'train.txt',
    'valid': 'valid.txt',
    'vocab': 'vocab.txt',
}


def resolve_path(path: str) -> str:
  """Maps `sample:<name>` to the absolute path of an embedded file.

  Args:
    path: a file path or glob, or `sample:train`, `sample:valid`, `sample:vocab`.

  Returns:
    The absolute path of the embedded file for a `sample:` path; any other path unchanged.

  Raises:
    ValueError: `path` uses the `sample:` scheme with an unknown name.
  """
  if not path.startswith(SCHEME):
    return path
  name = path[len(SCHEME):]
  if name not in _SAMPLE_FILES:
    choices = ', '.join(SCHEME + key for key in _SAMPLE_FILES)
    raise ValueError(f'Unknown embedded sample {path!r}; valid choices are {choices}.')
  return os.path.join(_SAMPLE_DIR, _SAMPLE_FILES[name])
