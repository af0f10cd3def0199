"""The context-free masked-LM baseline: what a model gets from token frequencies and copying alone.

A masked-LM that has not learned to use context can still be right at two kinds of masked
positions: where the input shows `[MASK]` it can guess the most frequent target, and where the
masking policy kept a token (BERT's 10% unchanged, and by chance some of the 10% random) it can
copy the input. Its accuracy is the best any context-free predictor of that form reaches, and it
is where small pretraining runs stall (the "frequency plateau"): an MLM accuracy above it shows
that the model reads context. It depends only on the data and the masking policy.
"""

import tensorflow as tf
import tf_keras


class ContextFreeMlmAccuracy(tf_keras.metrics.Metric):
  """Accuracy of: the most frequent target at `[MASK]` inputs, the input token elsewhere.

  The most frequent target is taken over everything the metric has seen since its last reset
  (an in-sample choice, so the baseline is if anything flattering), counting only positions whose
  input is `[MASK]`.
  """

  def __init__(self, vocab_size, mask_id, name='mlm_context_free_accuracy', **kwargs):
    """Initializes the counters.

    Args:
      vocab_size: V, the number of target ids.
      mask_id: id of `[MASK]`.
      name: metric name.
      **kwargs: Keras metric arguments.
    """
    super().__init__(name=name, **kwargs)
    self._mask_id = mask_id
    # Targets at [MASK] inputs, by id: [V].
    self._masked_targets = self.add_weight(
        'masked_targets', shape=(vocab_size,), initializer='zeros', dtype=tf.float32)
    self._copied = self.add_weight('copied', initializer='zeros', dtype=tf.float32)
    self._count = self.add_weight('count', initializer='zeros', dtype=tf.float32)

  def update_state(self, input_word_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights):
    """Counts one batch.

    Args:
      input_word_ids: [B, T] int corrupted inputs.
      masked_lm_positions: [B, P] int positions of the prediction slots.
      masked_lm_ids: [B, P] int original tokens.
      masked_lm_weights: [B, P] float, 0 for padded slots.
    """
    shown = tf.gather(input_word_ids, masked_lm_positions, batch_dims=1)  # [B, P]
    weights = tf.cast(masked_lm_weights, tf.float32)
    at_mask = tf.cast(tf.equal(shown, self._mask_id), tf.float32) * weights
    copied = tf.cast(tf.equal(shown, masked_lm_ids), tf.float32) * weights
    self._masked_targets.assign_add(tf.math.unsorted_segment_sum(
        tf.reshape(at_mask, [-1]), tf.reshape(tf.cast(masked_lm_ids, tf.int32), [-1]),
        self._masked_targets.shape[0]))
    self._copied.assign_add(tf.reduce_sum(copied))
    self._count.assign_add(tf.reduce_sum(weights))

  def result(self):
    return tf.math.divide_no_nan(tf.reduce_max(self._masked_targets) + self._copied, self._count)

  def reset_state(self):
    for variable in (self._masked_targets, self._copied, self._count):
      variable.assign(tf.zeros_like(variable))
