"""Writing small output files so that readers never see a partial one."""

import json
import os

import tensorflow as tf


def write_text(path: str, text: str) -> None:
  """Writes `text` under a temporary name beside `path`, then renames it to `path`.

  A run that dies mid-write leaves at most the temporary file, never a truncated `path`.
  """
  temporary = f'{path}.incomplete-{os.getpid()}'
  with tf.io.gfile.GFile(temporary, 'w') as f:
    f.write(text)
  tf.io.gfile.rename(temporary, path, overwrite=True)


def write_json(path: str, data) -> None:
  """`write_text` of `data` as indented JSON with sorted keys."""
  write_text(path, json.dumps(data, indent=2, sort_keys=True) + '\n')
