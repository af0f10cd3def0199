"""Tests of the SCRIPT pretraining Task on real (embedded) text."""

import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.tasks import script_task
from tests import testing_utils


def _task_config(**model_overrides):
  return testing_utils.sample_task_config(script_task.ScriptPretrainTaskConfig,
                                          testing_utils.tiny_script_config(**model_overrides))


class ScriptTaskTest(tf.test.TestCase):

  def test_train_and_validation_steps_report_the_loss_of_section_2(self):
    task = task_factory.get_task(_task_config())
    self.assertIsInstance(task, script_task.ScriptPretrainTask)
    report = testing_utils.train_and_validation_step(task)
    results = report.train_metrics
    self.assertEqual({'mlm_loss', 'disc_loss', 'mlm_accuracy', 'replaced_fraction',
                      'disc_accuracy', 'disc_auc'}, set(results))
    self.assertGreater(results['disc_loss'], 0.0)
    # L = L_MLM + α·L_Disc with α = 50 (Appendix 4.1).
    self.assertAllClose(results['mlm_loss'] + 50.0 * results['disc_loss'], report.train_loss,
                        rtol=1e-5)
    self.assertTrue(np.isfinite(report.validation_loss))

  def test_overfits_one_batch(self):
    first, last = testing_utils.overfit_losses(task_factory.get_task(_task_config()), 60)
    # Both terms fall; the critic's has fresh samples every step, so it falls more slowly.
    self.assertLess(last, 0.75 * first)


if __name__ == '__main__':
  tf.test.main()
