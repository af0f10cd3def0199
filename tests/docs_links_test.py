"""Every relative link in the repository's Markdown points at a file that is there.

Result files move and reports are rewritten; a link that no longer resolves sends a reader of
the README, the docs or the findings page to nothing.
"""

import glob
import os
import re
import tempfile
import unittest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# `[text](target)`, the target without spaces; absolute URLs and in-page anchors are skipped.
_LINK = re.compile(r'\]\(([^)\s]+)\)')


def _markdown_files() -> list[str]:
  patterns = ('*.md', 'docs/**/*.md', 'benchmarks/**/*.md', 'teams_lab/**/*.md',
              'teams_tf/**/*.md', 'experiments/**/*.md')
  return sorted({path for pattern in patterns
                 for path in glob.glob(os.path.join(_ROOT, pattern), recursive=True)})


def broken_links(path: str) -> list[str]:
  with open(path, encoding='utf-8') as f:
    text = f.read()
  broken = []
  for match in _LINK.finditer(text):
    target = match.group(1)
    if re.match(r'[a-z]+:', target) or target.startswith('#'):
      continue
    resolved = os.path.join(os.path.dirname(path), target.split('#')[0])
    if not os.path.exists(resolved):
      broken.append(target)
  return broken


class DocsLinksTest(unittest.TestCase):

  def test_every_relative_link_resolves(self):
    files = _markdown_files()
    self.assertIn(os.path.join(_ROOT, 'README.md'), files)
    broken = {os.path.relpath(path, _ROOT): links
              for path in files if (links := broken_links(path))}
    self.assertEqual({}, broken, 'links to files that are not in the repository; point them at '
                     'the file that holds what they cite (git log --follow finds where it went)')

  def test_a_missing_target_is_found(self):
    path = os.path.join(self.enterContext(tempfile.TemporaryDirectory()), 'page.md')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('[here](page.md) [gone](results/gone.json#x) [web](https://example.org) [a](#b)\n')
    self.assertEqual(['results/gone.json#x'], broken_links(path))


if __name__ == '__main__':
  unittest.main()
