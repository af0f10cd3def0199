"""The context-free multi-word-selection baseline: what token identity alone picks from a set.

The candidate sets are the original token and K tokens sampled from the generator (TEAMS §3.2),
so their ids are not exchangeable: while the generator is untrained it samples rare tokens, and
the original is the most frequent candidate of its set; once the generator reaches unigram
frequencies it samples the most frequent tokens, and the original is usually the rarest. A
selector that ranks candidates by id alone is then above chance early and below it later, which
is what the TEAMS/ELECTRA discriminators showed at small scale before they read context (issue
20). An MWS accuracy above this baseline shows that the discriminator reads context.
"""

import tensorflow as tf
import tf_keras


class ContextFreeMwsAccuracy(tf_keras.metrics.Metric):
  """Accuracy of picking the candidate whose id is most often the original of its set.

  Scored prequentially: each batch's candidates are scored with the per-id shares counted on the
  batches before it (an id not seen yet gets the overall share), then the batch is counted, so
  the baseline never scores the occurrences it learned from. (The set-wise choice cannot be
  recovered from per-id counts at the end, as the RTD baseline's AUC is.) Ties for the best score
  count as a uniform random choice among the tied candidates.
  """

  def __init__(self, vocab_size, name='mws_context_free_accuracy', **kwargs):
    """Initializes the counters.

    Args:
      vocab_size: V, the number of token ids.
      name: metric name.
      **kwargs: Keras metric arguments.
    """
    super().__init__(name=name, **kwargs)
    self._vocab_size = vocab_size
    # Weighted appearances per id in candidate sets (last index 0) and as the original (1).
    self._counts = self.add_weight(
        'counts', shape=(vocab_size, 2), initializer='zeros', dtype=tf.float32)
    self._correct = self.add_weight('correct', initializer='zeros', dtype=tf.float32)
    self._total = self.add_weight('total', initializer='zeros', dtype=tf.float32)

  def update_state(self, candidate_ids, weights):
    """Scores one batch with the counts so far, then counts it.

    Args:
      candidate_ids: [B, P, K + 1] int candidate sets, column 0 the original (`candidate_ids`).
      weights: [B, P] 0 for padded prediction slots.
    """
    candidate_ids = tf.cast(candidate_ids, tf.int32)
    weights = tf.cast(weights, tf.float32)
    seen, original = self._counts[:, 0], self._counts[:, 1]
    overall = tf.math.divide_no_nan(tf.reduce_sum(original), tf.reduce_sum(seen))
    shares = tf.where(seen > 0, tf.math.divide_no_nan(original, seen), overall)  # [V]
    scores = tf.gather(shares, candidate_ids)  # [B, P, K + 1]
    best = tf.cast(tf.equal(scores, tf.reduce_max(scores, -1, keepdims=True)), tf.float32)
    correct = best[..., 0] / tf.reduce_sum(best, -1)  # [B, P]
    self._correct.assign_add(tf.reduce_sum(correct * weights))
    self._total.assign_add(tf.reduce_sum(weights))
    flat_ids = tf.reshape(candidate_ids, [-1])
    is_original = tf.reshape(tf.one_hot(tf.zeros_like(candidate_ids[..., 0]),
                                        tf.shape(candidate_ids)[-1]), [-1])
    slot_weights = tf.reshape(
        tf.broadcast_to(weights[..., None], tf.shape(candidate_ids)), [-1])
    self._counts.assign_add(tf.stack([
        tf.math.unsorted_segment_sum(slot_weights, flat_ids, self._vocab_size),
        tf.math.unsorted_segment_sum(slot_weights * is_original, flat_ids, self._vocab_size),
    ], axis=1))

  def result(self):
    return tf.math.divide_no_nan(self._correct, self._total)

  def reset_state(self):
    for variable in (self._counts, self._correct, self._total):
      variable.assign(tf.zeros_like(variable))
