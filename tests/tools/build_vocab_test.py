"""tools/build_vocab.py's command line (the library: tests/preprocessing/vocab_builder_test.py)."""

import os
import subprocess
import sys

import tensorflow as tf

from teams_tf.data import embedded

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def _run(*flags):
  return subprocess.run(
      [sys.executable, os.path.join(_ROOT, 'tools', 'build_vocab.py'), *flags], cwd=_ROOT,
      capture_output=True, text=True, timeout=300, check=False,
      env=os.environ | {'TF_CPP_MIN_LOG_LEVEL': '3'})


class BuildVocabCommandTest(tf.test.TestCase):

  def test_rebuilds_the_sample_vocabulary(self):
    # The command given in teams_tf/data/sample/SOURCE.md.
    output = os.path.join(self.get_temp_dir(), 'new', 'vocab.txt')
    result = _run('--input=sample:train', f'--output={output}', '--vocab_size=4000',
                  '--min_count=2')
    self.assertEqual(0, result.returncode, result.stderr[-3000:])
    with open(output, 'rb') as f, open(embedded.resolve_path('sample:vocab'), 'rb') as expected:
      self.assertEqual(f.read(), expected.read())
    self.assertEqual(os.listdir(os.path.dirname(output)), ['vocab.txt'])
    self.assertIn(f'wrote 3,660 tokens to {output}', result.stdout)
    self.assertIn('lines 746 (0.3 MB), words 60,315, distinct words 8,476', result.stdout)
    self.assertIn('[UNK] rate of the input under the new vocabulary: 0 of 77,195 tokens',
                  result.stdout)
    self.assertIn('lines/s', result.stderr)  # Progress.
    # Every step of the threshold search is reported, the last with the result.
    self.assertGreater(result.stderr.count('threshold search step '), 3)
    self.assertRegex(result.stderr, r'threshold search step \d+: pieces seen >= 3 times give '
                     r'3,660 tokens .*; done, elapsed')
    # Before the first (slow) step, what the search will do; after each one, its ETA.
    self.assertRegex(result.stderr, r'threshold search over word-piece counts \[2, [0-9,]+\] '
                     r'for [0-9,]+ input words: at most \d+ steps')
    self.assertRegex(result.stderr, r'threshold search step 1: .* more steps, elapsed '
                     r'[0-9:]+, ETA at most [0-9:]+')

  def test_help(self):
    result = _run('--help')
    self.assertEqual(1, result.returncode, result.stderr[-3000:])  # absl exits 1 after --help.
    for flag in ('--input', '--tfds_name', '--output', '--vocab_size', '--min_count',
                 '--[no]lower_case', '--max_lines'):
      self.assertIn(flag, result.stdout)

  def test_input_without_match_is_a_one_line_error(self):
    result = _run(f'--input={self.get_temp_dir()}/none*.txt',
                  f'--output={self.get_temp_dir()}/vocab.txt')
    self.assertEqual(1, result.returncode)
    self.assertNotIn('Traceback', result.stderr)
    last_line = result.stderr.strip().splitlines()[-1]
    self.assertStartsWith(last_line, 'error: ')
    self.assertIn('none*.txt', last_line)
    self.assertIn('matches no file', last_line)


if __name__ == '__main__':
  tf.test.main()
