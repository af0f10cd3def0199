"""tools/run_glue.py end to end on tiny GLUE fixtures: tables, then (in this process, without
TensorFlow's start-up) resume and a bad override's error."""

import json
import os
import subprocess
import sys

from absl import logging as absl_logging
import numpy as np
import tensorflow as tf

from teams_tf.finetuning import sweep
from tests.finetuning import glue_testing_utils as fixtures

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_OVERRIDE = 'task.train_data.global_batch_size=8,task.validation_data.global_batch_size=8'


class RunGlueTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = os.path.join(tf.compat.v1.test.get_temp_dir(), 'run_glue')
    cls.data_dir = fixtures.write_glue_records(cls.root)
    cls.checkpoint = fixtures.save_tiny_pretraining_checkpoint(
        os.path.join(cls.root, 'pretrain'))

  def _settings(self, output_dir, params_override=_OVERRIDE):
    """The flags of `_run_glue` as `sweep.run_fields` takes them."""
    return dict(tasks=['sst2', 'stsb'], seeds='2', size='demo', data_dir=self.data_dir,
                init_checkpoint=os.path.dirname(self.checkpoint), output_dir=output_dir,
                train_steps=3, params_override=params_override)

  def _run_glue(self, output_dir):
    return subprocess.run(
        [sys.executable, 'tools/run_glue.py',
         *[f'--{key}={",".join(value) if isinstance(value, list) else value}'
           for key, value in self._settings(output_dir).items()]],
        cwd=_ROOT, capture_output=True, text=True, timeout=900, check=False)

  def test_two_tasks_two_seeds_tables_and_resume(self):
    output_dir = os.path.join(self.get_temp_dir(), 'glue_runs')
    first = self._run_glue(output_dir)
    self.assertEqual(0, first.returncode, first.stderr[-5000:])
    self.assertIn('=== run 4/4: stsb seed 2 ===', first.stderr)
    self.assertIn('ETA', first.stderr)

    results = {}
    for task in ('sst2', 'stsb'):
      for seed in (1, 2):
        run_dir = os.path.join(output_dir, task, f'seed_{seed}')
        self.assertTrue(tf.io.gfile.exists(os.path.join(run_dir, 'ckpt-3.index')))
        with open(os.path.join(run_dir, 'result.json')) as f:
          results[(task, seed)] = json.load(f)
        self.assertEqual(3, results[(task, seed)]['train_steps'])
        self.assertEqual(16, results[(task, seed)]['dev_examples'])
    # Our dev accuracy and Model Garden's own validation metric score the same model.
    for seed in (1, 2):
      ours, theirs = results[('sst2', seed)], results[('sst2', seed)]['model_garden_validation']
      self.assertAllClose(theirs['cls_accuracy'], ours['metrics']['accuracy'], atol=1e-6)
      ours, theirs = results[('stsb', seed)], results[('stsb', seed)]['model_garden_validation']
      self.assertAllClose(theirs['pearson_spearman_corr'],
                          ours['metrics']['pearson_spearman_corr'], atol=1e-4)

    with open(os.path.join(output_dir, 'results.json')) as f:
      summary = json.load(f)
    for task, metric in (('sst2', 'accuracy'), ('stsb', 'spearman'), ('stsb', 'pearson')):
      values = [results[(task, seed)]['metrics'][metric] for seed in (1, 2)]
      stats = summary['tasks'][task]['metrics'][metric]
      self.assertAllClose([np.median(values), np.mean(values), np.std(values, ddof=1),
                           min(values), max(values)],
                          [stats[k] for k in ('median', 'mean', 'std', 'min', 'max')])
    self.assertEqual('spearman', summary['tasks']['stsb']['headline_metric'])
    self.assertAllClose(
        (summary['tasks']['sst2']['metrics']['accuracy']['median'] +
         summary['tasks']['stsb']['metrics']['spearman']['median']) / 2,
        summary['glue_average']['median'])
    with open(os.path.join(output_dir, 'results.md')) as f:
      table = f.read()
    self.assertIn('| sst2 | **accuracy** | 2 |', table)
    self.assertIn('| stsb | **Spearman correlation** | 2 |', table)
    self.assertIn("Model Garden's STS-B metric: (Pearson + Spearman) / 2", table)
    self.assertIn('GLUE average over 2 task(s) (sst2, stsb)', table)
    self.assertIn(table.strip(), first.stdout)

    # The same sweep again finds every result.json and trains nothing.
    result_files = [os.path.join(output_dir, task, f'seed_{seed}', 'result.json')
                    for task, seed in results]
    mtimes = [os.path.getmtime(path) for path in result_files]
    with self.assertLogs(absl_logging.get_absl_logger(), level='INFO') as logs:
      second_table = sweep.run_fields(self._settings(output_dir))
    log = '\n'.join(logs.output)
    self.assertIn('0 run(s) to do, 4 already done', log)
    self.assertIn('sst2 seed 1: skipped', log)
    self.assertNotIn('=== run', log)
    self.assertEqual(mtimes, [os.path.getmtime(path) for path in result_files])
    self.assertEqual(table.strip(), second_table.strip())

  def test_bad_override_is_refused_before_any_run(self):
    # The command prints it as one line, "error: ..." (teams_tf/cli/run_glue.py).
    output_dir = os.path.join(self.get_temp_dir(), 'bad')
    with self.assertRaisesRegex(ValueError, '^--params_override sets trainer.train_steps'):
      sweep.run_fields(self._settings(output_dir, 'trainer.train_steps=5'))
    self.assertFalse(os.path.exists(output_dir))


if __name__ == '__main__':
  tf.test.main()
