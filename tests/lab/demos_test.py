"""The demo benchmark's bookkeeping: verdicts against baselines, the run, skip, report."""

import json
import os

import tensorflow as tf

from official.core import exp_factory

from teams_lab import demos
from teams_tf import registry_imports  # pylint: disable=unused-import
from tests.lab import learning_test


class DemosTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.work_dir = os.path.join(self.get_temp_dir(), 'work')
    self.out_dir = os.path.join(self.get_temp_dir(), 'out')
    self.commands = []

  def _fake_train(self, validation):
    """A `train` that writes `validation` summaries where the command's model_dir says."""
    def train(command, log_path):
      self.commands.append(command)
      model_dir = next(arg.split('=', 1)[1] for arg in command if arg.startswith('--model_dir='))
      learning_test._write_events(os.path.join(model_dir, 'validation'), validation)
      with open(log_path, 'w') as f:
        f.write('done\n')
      return 0
    return train

  def test_verdicts_compare_with_the_context_free_baseline_else_chance(self):
    model_config = exp_factory.get_exp_config('teams_demo').task.model
    rows = demos.verdicts({'mlm_accuracy': 0.20, 'mlm_context_free_accuracy': 0.124,
                           'rtd_auc': 0.57, 'rtd_context_free_auc': 0.58,
                           'mws_accuracy': 0.20, 'rtd_accuracy': 0.9}, model_config)
    self.assertEqual(
        [('mlm_accuracy', 0.124, 'context-free', True), ('mws_accuracy', 0.166667, 'chance', True),
         ('rtd_auc', 0.58, 'context-free', False)],
        [(r['metric'], round(r['baseline'], 6), r['baseline_kind'], r['above']) for r in rows])

  def test_a_run_writes_its_result_and_a_rerun_skips_it(self):
    train = self._fake_train({700: {'mlm_accuracy': 0.03, 'mlm_context_free_accuracy': 0.124},
                              1400: {'mlm_accuracy': 0.21, 'mlm_context_free_accuracy': 0.124,
                                     'disc_auc': 0.62}})
    # A directory an interrupted run left is not resumed.
    os.makedirs(os.path.join(self.work_dir, 'script_demo', 'stale'))
    result = demos.run_demo('script', self.work_dir, self.out_dir, log=lambda _: None,
                            train=train)
    self.assertEqual(['--experiment=script_demo', '--mode=train_and_eval'],
                     self.commands[0][3:5])
    self.assertFalse(os.path.exists(os.path.join(self.work_dir, 'script_demo', 'stale')))
    self.assertEqual(1400, result['step'])
    self.assertTrue(result['passes'])
    self.assertEqual(['disc_auc', 'mlm_accuracy'],
                     [row['metric'] for row in result['metrics']])
    with open(demos.result_path(self.out_dir, 'script')) as f:
      self.assertEqual(result, json.load(f))
    again = demos.run_demo('script', self.work_dir, self.out_dir, log=lambda _: None,
                           train=train)
    self.assertLen(self.commands, 1)
    self.assertEqual(result, again)

  def test_a_failed_run_writes_no_result(self):
    result = demos.run_demo('bert', self.work_dir, self.out_dir, log=lambda _: None,
                            train=lambda command, log_path: 1)
    self.assertIsNone(result)
    self.assertFalse(os.path.exists(demos.result_path(self.out_dir, 'bert')))

  def test_report_marks_demos_below_a_baseline_and_the_ones_not_run(self):
    demos.run_demo('bert', self.work_dir, self.out_dir, log=lambda _: None, train=self._fake_train(
        {1400: {'mlm_accuracy': 0.10, 'mlm_context_free_accuracy': 0.124}}))
    demos.write_report(self.out_dir, 'python tools/benchmark_demos.py')
    with open(os.path.join(self.out_dir, 'demos.md')) as f:
      report = f.read()
    self.assertIn('| bert_demo | mlm_accuracy | 0.100 | 0.124 (context-free) | **no** |', report)
    self.assertIn('| teams_demo | not run yet |', report)
    self.assertIn('1 of 7 demos run; below a baseline: bert_demo.', report)


if __name__ == '__main__':
  tf.test.main()
