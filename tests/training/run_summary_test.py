"""The closing summary: the last validation beside chance and context-free baselines, paths,
next."""

import os

import tensorflow as tf

from official.core import exp_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.training import run_summary


def _write_validation(model_dir, rows):
  writer = tf.summary.create_file_writer(os.path.join(model_dir, 'validation'))
  with writer.as_default():
    for step, metrics in rows.items():
      for name, value in metrics.items():
        tf.summary.scalar(name, value, step=step)
  writer.close()


class RunSummaryTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.teams = exp_factory.get_exp_config('teams_demo').task.model

  def test_chance_levels(self):
    self.assertEqual(0.5, run_summary.chance_level('rtd_auc', self.teams))
    self.assertAlmostEqual(1 / 6, run_summary.chance_level('mws_accuracy', self.teams))
    self.teams.num_negatives = 3
    self.assertAlmostEqual(1 / 4, run_summary.chance_level('mws_accuracy', self.teams))
    self.assertIsNone(run_summary.chance_level('mlm_accuracy', self.teams))

  def test_main_metrics_beside_their_baselines(self):
    lines = run_summary.validation_lines(
        {'mlm_accuracy': 0.151, 'mlm_context_free_accuracy': 0.124, 'rtd_auc': 0.555,
         'rtd_context_free_auc': 0.589, 'rtd_accuracy': 0.855, 'mws_accuracy': 0.221,
         'mws_context_free_accuracy': 0.237, 'mlm_loss': 5.1}, self.teams)
    self.assertEqual(['mlm_accuracy  0.151  (context-free 0.124)',
                      'mws_accuracy  0.221  (chance 0.167; context-free 0.237)',
                      'rtd_auc       0.555  (chance 0.500; context-free 0.589)'], lines)

  def test_fine_tuning_metrics_without_baselines_are_all_shown(self):
    self.assertEqual(['cls_accuracy  0.812'],
                     run_summary.validation_lines({'cls_accuracy': 0.8123, 'loss': 0.4},
                                                  self.teams))

  def test_summary_reads_the_last_evaluation_and_names_the_next_commands(self):
    model_dir = self.get_temp_dir()
    _write_validation(model_dir, {400: {'mlm_accuracy': 0.05, 'mlm_context_free_accuracy': 0.12},
                                  800: {'mlm_accuracy': 0.15, 'mlm_context_free_accuracy': 0.12}})
    summary = run_summary.closing_summary(model_dir, 'bert_demo', 'train_and_eval', self.teams,
                                          'demo', seconds=250.4)
    self.assertIn(f"Done: train_and_eval of 'bert_demo' in {model_dir} (0:04:10 in all)\n",
                  summary)
    self.assertIn('  validation at step 800:\n    mlm_accuracy  0.150  (context-free 0.120)',
                  summary)
    self.assertIn(f'teams-export --kind=encoder --model_dir={model_dir}', summary)
    self.assertIn(f'teams-run-glue --tasks=sst2 --size=demo --init_checkpoint={model_dir}',
                  summary)

  def test_a_training_only_fine_tuning_run_has_no_validation_or_next_commands(self):
    summary = run_summary.closing_summary(self.get_temp_dir(), 'glue_sst2_demo', 'train',
                                          self.teams)
    self.assertNotIn('validation', summary)
    self.assertNotIn('next', summary)
    self.assertIn('checkpoint   none', summary)


if __name__ == '__main__':
  tf.test.main()
