"""The tree passes `ruff check` with the repository's ruff.toml (Google style, import order)."""

import os
import subprocess
import sys
import unittest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class LintTest(unittest.TestCase):

  def test_ruff_finds_nothing(self):
    run = subprocess.run([sys.executable, '-m', 'ruff', 'check', '--no-cache', '.'], cwd=_ROOT,
                         capture_output=True, text=True, check=False)
    self.assertEqual(0, run.returncode, f'`ruff check .` found problems:\n{run.stdout[-6000:]}'
                     f'{run.stderr[-2000:]}Fix them, or run `ruff check --fix .` for import order.')


if __name__ == '__main__':
  unittest.main()
