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
    report = testing_utils.train_and_validation_step(task)
    self.assertGreater(float(tf.reduce_sum(report.batch['masked_lm_weights'])), 0)
    results = report.train_metrics
    vocab_size = report.model.masked_lm.bias.shape[0]
    self.assertEqual({'mlm_loss', 'mlm_accuracy'}, set(results))
    # Real masks make the loss strictly positive (Model Garden's dummy data gives 0); it is
    # about log V at initialisation, and it is the whole training loss (Eq. 1 alone).
    self.assertBetween(results['mlm_loss'], 0.5 * np.log(vocab_size), 2.0 * np.log(vocab_size))
    self.assertAllClose(results['mlm_loss'], report.train_loss, rtol=1e-6)
    self.assertBetween(results['mlm_accuracy'], 0.0, 1.0)
    self.assertTrue(np.isfinite(report.validation_loss))
    self.assertAllClose(report.validation_loss, report.validation_metrics['mlm_loss'], rtol=1e-6)

  def test_each_step_builds_its_loss_terms_once(self):
    calls = []

    class CountingTask(mlm_task.MlmPretrainTask):

      def loss_terms(self, labels, model_outputs):
        calls.append(len(calls))
        return super().loss_terms(labels, model_outputs)

    report = testing_utils.train_and_validation_step(CountingTask(_task_config()))
    # One training and one validation step; the reported terms are the loss's own.
    self.assertLen(calls, 2)
    self.assertAllClose(report.train_loss, report.train_metrics['mlm_loss'], rtol=1e-6)

  def test_overfits_one_batch(self):
    first, last = testing_utils.overfit_losses(task_factory.get_task(_task_config()), 40)
    # About 0.45 * first after 40 steps.
    self.assertLess(last, 0.6 * first)

  def test_evaluates_at_a_longer_sequence_length_than_it_trains(self):
    config = _task_config()
    config.model.relative_position_bias = True
    config.train_data.seq_length, config.train_data.max_predictions_per_seq = 16, 3
    report = testing_utils.train_and_validation_step(task_factory.get_task(config))
    self.assertEqual([4, 16], report.batch['input_word_ids'].shape.as_list())
    validation_batch = next(iter(mlm_task.MlmPretrainTask(config).build_inputs(
        config.validation_data)))
    self.assertEqual([4, 32], validation_batch['input_word_ids'].shape.as_list())
    self.assertTrue(np.isfinite(report.validation_loss))

  def test_vocab_size_mismatch_is_reported_with_the_fix(self):
    config = _task_config()
    config.model.encoder.vocab_size = 123
    with self.assertRaisesRegex(ValueError, r'vocab_size=123 .* --params_override'):
      mlm_task.MlmPretrainTask(config)


if __name__ == '__main__':
  tf.test.main()
