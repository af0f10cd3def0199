"""The context-free replaced-token-detection baseline: what token identity alone tells apart.

A discriminator that does not read context can still rank tokens by how often each token id is
replaced. While the generator is untrained it samples rare tokens almost uniformly, so identity
alone separates replaced from original tokens well; once the generator reaches unigram
frequencies (the MLM plateau) its samples look like ordinary text token by token and identity
tells little. An RTD AUC above this baseline shows that the discriminator reads context; an AUC
that falls with it shows the task getting harder, not the discriminator forgetting (issue 20).
"""

import tensorflow as tf
import tf_keras


class ContextFreeRtdAuc(tf_keras.metrics.Metric):
  """AUC of scoring each token by its id's share of original (not replaced) occurrences.

  The shares are cross-fitted so that the baseline is not flattered by rare ids: evaluation
  batches alternate between two halves, and each half's tokens are scored with the shares
  counted on the other half (an id the other half never showed gets that half's overall share).
  Ties, including ids with the same share, count one half, as in the Mann-Whitney form of the
  AUC.
  """

  def __init__(self, vocab_size, name='rtd_context_free_auc', **kwargs):
    """Initializes the counters.

    Args:
      vocab_size: V, the number of token ids.
      name: metric name.
      **kwargs: Keras metric arguments.
    """
    super().__init__(name=name, **kwargs)
    self._vocab_size = vocab_size
    # Weighted occurrences per half and id of replaced (last index 0) and original (1) tokens.
    self._counts = self.add_weight(
        'counts', shape=(2, vocab_size, 2), initializer='zeros', dtype=tf.float32)
    self._batches = self.add_weight('batches', initializer='zeros', dtype=tf.float32)

  def update_state(self, token_ids, labels, weights):
    """Counts one batch into the half whose turn it is.

    Args:
      token_ids: [B, T] int ids the discriminator reads (the corrupted sequence).
      labels: [B, T] 1 for an original token, 0 for a replaced one (`rtd_labels`).
      weights: [B, T] 0 for padding.
    """
    half = tf.cast(tf.math.floormod(self._batches, 2.0), tf.int32)
    ids = tf.reshape(tf.cast(token_ids, tf.int32), [-1])
    labels = tf.reshape(tf.cast(labels, tf.int32), [-1])
    weights = tf.reshape(tf.cast(weights, tf.float32), [-1])
    cells = (half * self._vocab_size + ids) * 2 + labels
    counts = tf.math.unsorted_segment_sum(weights, cells, 2 * self._vocab_size * 2)
    self._counts.assign_add(tf.reshape(counts, [2, self._vocab_size, 2]))
    self._batches.assign_add(1.0)

  def result(self):
    replaced, original = self._counts[..., 0], self._counts[..., 1]  # [2, V] each.
    seen = replaced + original
    overall = tf.math.divide_no_nan(tf.reduce_sum(original, -1, keepdims=True),
                                    tf.reduce_sum(seen, -1, keepdims=True))  # [2, 1]
    shares = tf.where(seen > 0, tf.math.divide_no_nan(original, seen), overall)
    # Half h's tokens are scored with the other half's shares.
    scores = tf.reshape(tf.reverse(shares, axis=[0]), [-1])
    replaced, original = tf.reshape(replaced, [-1]), tf.reshape(original, [-1])
    order = tf.argsort(scores)
    # Equal scores form one tied group: [G] sums of each column, groups ascending.
    _, group = tf.unique(tf.gather(scores, order))
    num_groups = tf.reduce_max(group) + 1
    group_replaced = tf.math.unsorted_segment_sum(tf.gather(replaced, order), group, num_groups)
    group_original = tf.math.unsorted_segment_sum(tf.gather(original, order), group, num_groups)
    replaced_below = tf.cumsum(group_replaced, exclusive=True)
    concordant = tf.reduce_sum(group_original * (replaced_below + 0.5 * group_replaced))
    return tf.math.divide_no_nan(
        concordant, tf.reduce_sum(original) * tf.reduce_sum(replaced))

  def reset_state(self):
    self._counts.assign(tf.zeros_like(self._counts))
    self._batches.assign(0.0)
