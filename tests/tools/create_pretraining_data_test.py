"""tools/create_pretraining_data.py's command line (the library: pretraining_records_test.py)."""

import json
import os
import subprocess
import sys

import tensorflow as tf

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def _run(*flags):
  return subprocess.run(
      [sys.executable, os.path.join(_ROOT, 'tools', 'create_pretraining_data.py'), *flags],
      cwd=_ROOT, capture_output=True, text=True, timeout=300, check=False,
      env=os.environ | {'TF_CPP_MIN_LOG_LEVEL': '3'})


class CreatePretrainingDataCommandTest(tf.test.TestCase):

  def _assert_one_line_error(self, result, *expected):
    self.assertEqual(1, result.returncode, result.stderr[-3000:])
    self.assertNotIn('Traceback', result.stderr)
    last_line = result.stderr.strip().splitlines()[-1]
    self.assertStartsWith(last_line, 'error: ')
    for text in expected:
      self.assertIn(text, last_line)

  def test_masked_run_with_two_worker_processes(self):
    output_dir = os.path.join(self.get_temp_dir(), 'records')
    result = _run('--input=sample:valid', '--vocab_file=sample:vocab', f'--output_dir={output_dir}',
                  '--output_kind=masked', '--dupe_factor=2', '--num_shards=2', '--num_workers=2',
                  '--seq_length=64', '--max_predictions_per_seq=10')
    self.assertEqual(0, result.returncode, result.stderr[-3000:])
    self.assertEqual(sorted(os.listdir(output_dir)), [
        'pretrain-00000-of-00002.tfrecord', 'pretrain-00001-of-00002.tfrecord',
        'pretrain-summary.json'])
    with open(os.path.join(output_dir, 'pretrain-summary.json')) as f:
      summary = json.load(f)
    self.assertEqual(summary['counts']['documents'], 4)
    self.assertEqual(summary['records'], 2 * summary['counts']['sequences'])
    self.assertIn(f'wrote {summary["records"]:,} masked records in 2 shards', result.stdout)
    # The 3 characters of valid.txt absent from train.txt.
    self.assertIn('[UNK] 3 (', result.stdout)
    self.assertIn('docs/s', result.stderr)
    self.assertIn('records/s', result.stderr)

  def test_help(self):
    result = _run('--help')
    self.assertEqual(1, result.returncode, result.stderr[-3000:])  # absl exits 1 after --help.
    for flag in ('--input', '--document_mode', '--tfds_name', '--vocab_file', '--output_dir',
                 '--output_prefix', '--num_shards', '--output_kind', '--seq_length',
                 '--num_segments', '--dupe_factor', '--max_predictions_per_seq', '--mask_rate',
                 '--mask_token_rate', '--random_token_rate', '--seed', '--num_workers'):
      self.assertIn(flag, result.stdout)

  def test_masking_flags_with_unmasked_output_are_an_error(self):
    result = _run('--input=sample:valid', '--vocab_file=sample:vocab', '--output_kind=unmasked',
                  '--dupe_factor=10', f'--output_dir={self.get_temp_dir()}/out')
    self._assert_one_line_error(result, '--dupe_factor only apply to --output_kind=masked')


if __name__ == '__main__':
  tf.test.main()
