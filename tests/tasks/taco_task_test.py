"""Tests of the TACO pretraining Task on real (embedded) text."""

import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.tasks import taco_task
from tests import testing_utils


def _task_config(**model_overrides):
  return testing_utils.sample_task_config(taco_task.TacoPretrainTaskConfig,
                                          testing_utils.tiny_taco_config(**model_overrides))


class TacoTaskTest(tf.test.TestCase):

  def test_train_and_validation_steps_report_eq_11(self):
    task = task_factory.get_task(_task_config())
    self.assertIsInstance(task, taco_task.TacoPretrainTask)
    report = testing_utils.train_and_validation_step(task)
    results = report.train_metrics
    self.assertEqual({'mlm_loss', 'tc_loss', 'mlm_accuracy'}, set(results))
    self.assertGreater(results['tc_loss'], 0.0)
    self.assertAllClose(results['mlm_loss'] + results['tc_loss'], report.train_loss, rtol=1e-5)
    self.assertTrue(np.isfinite(report.validation_loss))

  def test_overfits_one_batch(self):
    first, last = testing_utils.overfit_losses(task_factory.get_task(_task_config()), 40)
    self.assertLess(last, 0.7 * first)


if __name__ == '__main__':
  tf.test.main()
