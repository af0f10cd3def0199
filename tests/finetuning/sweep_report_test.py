"""teams_tf.finetuning.sweep_report: the tables of a seed sweep."""

import json
import math
import os

import tensorflow as tf

from teams_tf.finetuning import sweep_report


class SweepReportTest(tf.test.TestCase):

  def test_single_class_runs_are_flagged_in_the_table(self):
    results = [dict(task='sst2', seed=seed, predicted_classes=classes,
                    metrics=dict(accuracy=accuracy))
               for seed, classes, accuracy in ((0, 2, 0.81), (1, 1, 0.509), (2, 2, 0.80))]
    summary = sweep_report.summarize(results, ['sst2'])
    self.assertEqual([1], summary['tasks']['sst2']['single_class_seeds'])
    table = sweep_report.markdown(summary, 'title')
    self.assertIn('1 run(s) predicted a single class', table)
    self.assertIn('sst2 seed 1', table)
    results[1]['predicted_classes'] = 2
    self.assertNotIn('single class',
                     sweep_report.markdown(sweep_report.summarize(results, ['sst2']), 'title'))

  def test_tables_are_strict_json_with_an_undefined_correlation_as_null(self):
    # A constant prediction leaves the correlations undefined (NaN); result.json reads them null.
    results = [dict(task='stsb', seed=1, metrics=dict(spearman=float('nan'), pearson=None,
                                                      pearson_spearman_corr=None)),
               dict(task='stsb', seed=2, metrics=dict(spearman=0.5, pearson=0.4,
                                                      pearson_spearman_corr=0.45))]
    output_dir = self.get_temp_dir()
    table = sweep_report.write_tables(results, output_dir, ['stsb', 'cola'], [1, 2], 'demo', '')
    with open(os.path.join(output_dir, 'results.md')) as f:
      self.assertEqual(table, f.read())
    self.assertIn('# GLUE: random init, size demo, seeds 1,2', table)
    with open(os.path.join(output_dir, 'results.json')) as f:
      summary = json.loads(f.read(), parse_constant=self.fail)
    spearman = summary['tasks']['stsb']['metrics']['spearman']
    self.assertEqual([None, 0.5], spearman['values'])
    self.assertIsNone(spearman['median'])
    self.assertEqual(['stsb'], summary['glue_average']['tasks'])
    self.assertEqual(('demo', '', [1, 2]),
                     (summary['size'], summary['init_checkpoint'], summary['seeds']))
    self.assertTrue(math.isnan(sweep_report.summarize(results, ['stsb'])['glue_average']['mean']))


if __name__ == '__main__':
  tf.test.main()
