"""Tests of the BERT-MLM pretraining Task on real (embedded) text with real masks."""

import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.tasks import mlm_task
from tests import testing_utils


def _task_config():
  return testing_utils.sample_task_config(mlm_task.MlmPretrainTaskConfig,
                                          testing_utils.tiny_mlm_config())


class MlmTaskTest(tf.test.TestCase):

  def test_registered_and_train_and_validation_steps_report_mlm_metrics(self):
    task = task_factory.get_task(_task_config())
    self.assertIsInstance(task, mlm_task.MlmPretrainTask)
    model = task.build_model()
    metrics = task.build_metrics()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    self.assertGreater(float(tf.reduce_sum(batch['masked_lm_weights'])), 0)
    logs = task.train_step(
        batch, model, testing_utils.constant_lr_optimizer(1e-3), metrics=metrics)
    results = {m.name: float(m.result()) for m in metrics}
    self.assertEqual({'mlm_loss', 'mlm_accuracy'}, set(results))
    # Real masks make the loss strictly positive (Model Garden's dummy data gives 0); it is
    # about log V at initialisation, and it is the whole training loss (Eq. 1 alone).
    self.assertBetween(results['mlm_loss'], 0.5 * np.log(model.masked_lm.bias.shape[0]),
                       2.0 * np.log(model.masked_lm.bias.shape[0]))
    self.assertAllClose(results['mlm_loss'], float(logs['loss']), rtol=1e-6)
    self.assertBetween(results['mlm_accuracy'], 0.0, 1.0)
    for metric in metrics:
      metric.reset_state()
    val_batch = next(iter(task.build_inputs(task.task_config.validation_data)))
    val_logs = task.validation_step(val_batch, model, metrics=metrics)
    self.assertTrue(np.isfinite(float(val_logs['loss'])))
    self.assertAllClose(float(val_logs['loss']), float(metrics[0].result()), rtol=1e-6)

  def test_overfits_one_batch(self):
    first, last = testing_utils.overfit_losses(task_factory.get_task(_task_config()), 40)
    # About 0.45 * first after 40 steps.
    self.assertLess(last, 0.6 * first)

  def test_vocab_size_mismatch_is_reported_with_the_fix(self):
    config = _task_config()
    config.model.encoder.vocab_size = 123
    with self.assertRaisesRegex(ValueError, r'vocab_size=123 .* --params_override'):
      mlm_task.MlmPretrainTask(config)


if __name__ == '__main__':
  tf.test.main()
