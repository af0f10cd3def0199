"""GLUE fine-tuning task: the STS-B loss scores each prediction against its own label."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import exp_factory
from official.core import task_factory
from official.nlp.configs import encoders
from official.nlp.tasks import sentence_prediction

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.tasks import sentence_prediction_task
from tests import testing_utils

_BATCH = 16


def _task(num_classes):
  return sentence_prediction_task.SentencePredictionTask(
      sentence_prediction_task.SentencePredictionConfig(model=sentence_prediction.ModelConfig(
          num_classes=num_classes,
          encoder=encoders.EncoderConfig(type='bert', bert=testing_utils.tiny_encoder_config()))))


def _batch(labels, seed=0):
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, testing_utils.VOCAB_SIZE, (len(labels), testing_utils.SEQ_LENGTH))
  return dict(input_word_ids=tf.constant(ids, tf.int32),
              input_mask=tf.ones_like(ids, tf.int32),
              input_type_ids=tf.constant(np.repeat([[0] * 8 + [1] * 8], len(labels), 0), tf.int32),
              label_ids=tf.constant(labels))


class SentencePredictionTaskTest(tf.test.TestCase):

  def test_glue_experiments_run_this_task(self):
    for name in ('glue_stsb_mini', 'glue_sst2_small'):
      task = task_factory.get_task(exp_factory.get_exp_config(name).task)
      self.assertIsInstance(task, sentence_prediction_task.SentencePredictionTask, name)

  def test_regression_loss_is_the_mean_squared_error_of_each_prediction(self):
    rng = np.random.default_rng(1)
    labels = rng.uniform(0, 5, _BATCH).astype(np.float32)
    predictions = rng.uniform(0, 5, (_BATCH, 1)).astype(np.float32)
    task = _task(num_classes=1)
    features = {'label_ids': tf.constant(labels)}
    self.assertAllClose(np.mean((predictions[:, 0] - labels) ** 2),
                        task.build_losses(features, tf.constant(predictions)), rtol=1e-6)
    self.assertAllClose(0.0, task.build_losses(features, tf.constant(labels[:, None])))
    # Validation reports that error too (Model Garden's metric stays at 0).
    metrics = task.build_metrics()
    task.process_metrics(metrics, features, tf.constant(predictions))
    self.assertAllClose(np.mean((predictions[:, 0] - labels) ** 2), metrics[0].result(),
                        rtol=1e-6)

  def test_classification_loss_is_the_cross_entropy(self):
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 3, _BATCH)
    logits = rng.normal(size=(_BATCH, 3)).astype(np.float32)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    self.assertAllClose(-np.mean(log_probs[np.arange(_BATCH), labels]),
                        _task(num_classes=3).build_losses({'label_ids': tf.constant(labels)},
                                                          tf.constant(logits)), rtol=1e-6)

  def test_fine_tuning_fits_similarity_scores(self):
    # Model Garden's loss cannot go below twice the labels' variance on a batch; fitted scores
    # go far below their variance. After 60 steps some initialisations were still at 0.29 of it,
    # after 150 every one of six was below 0.012.
    tf_keras.utils.set_random_seed(0)
    labels = np.random.default_rng(3).uniform(0, 5, _BATCH).astype(np.float32)
    task = _task(num_classes=1)
    model = task.build_model()
    batch = _batch(labels)
    optimizer = testing_utils.constant_lr_optimizer(3e-3)
    testing_utils.build_step_variables(model, optimizer, batch)
    step = tf.function(lambda: task.train_step(batch, model, optimizer, metrics=[]))
    for _ in range(150):
      step()
    fitted = float(task.build_losses(batch, model(batch, training=False)))
    self.assertLess(fitted, 0.1 * np.var(labels))


if __name__ == '__main__':
  tf.test.main()
