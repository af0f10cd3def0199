"""Parameter counts of a registered pretraining experiment, built without its data."""

import tensorflow as tf

from official.core import exp_factory
from official.core import task_factory

from teams_tf.models import parameter_counts


def _tiny_batch(batch_size=2, seq_length=8):
  """Two sequences: in-batch negatives (COCO-LM's SCL, TACO's TC) need another sequence."""
  ones = tf.ones([batch_size, seq_length], tf.int32)
  return dict(
      input_word_ids=ones * 5, input_mask=ones, input_type_ids=ones * 0,
      masked_lm_positions=tf.constant([[1, 2]] * batch_size, tf.int32),
      masked_lm_ids=tf.constant([[6, 7]] * batch_size, tf.int32),
      masked_lm_weights=tf.ones([batch_size, 2], tf.float32))


def count(name, vocab_size):
  """`parameter_counts.parameter_counts` of experiment `name` with vocabulary size `vocab_size`.

  Args:
    name: a registered pretraining experiment.
    vocab_size: V of its encoders.

  Returns:
    Dict of ints: `kept_encoder`, `generator` and `total_trained` (see `parameter_counts`).
  """
  params = exp_factory.get_exp_config(name)
  params.task.model.encoder.vocab_size = vocab_size
  # Counting needs no data; dropping it skips the data/vocabulary checks of the task.
  params.task.train_data.input_path = ''
  params.task.validation_data.input_path = ''
  model = task_factory.get_task(params.task).build_model()
  model(_tiny_batch())
  return parameter_counts.parameter_counts(model)
