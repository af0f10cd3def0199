"""Gumbel-softmax sampling (SCRIPT Eq. 3) and the write-back of sampled tokens."""

import numpy as np
import tensorflow as tf

from teams_tf.layers import token_sampling


class GumbelSoftmaxSampleTest(tf.test.TestCase):

  def test_hard_samples_follow_the_softmax_for_any_temperature(self):
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05], np.float32))
    rows = np.tile(logits, (20000, 1))
    for temperature in (0.1, 1.0, 10.0):
      ids, _ = token_sampling.gumbel_softmax_sample(rows, temperature, seed=[1, 2])
      frequencies = np.bincount(ids.numpy(), minlength=4) / len(rows)
      # Binomial standard error at n = 20000 is below 0.004.
      self.assertAllClose(np.exp(logits), frequencies, atol=0.015)
    same_seed = [token_sampling.gumbel_softmax_sample(rows[:50], t, seed=[3, 4])[0]
                 for t in (0.5, 2.0)]
    self.assertAllEqual(*same_seed)  # The argmax does not depend on τ.

  def test_straight_through_is_hard_forward_and_soft_backward(self):
    logits = tf.Variable(np.random.default_rng(0).normal(size=(3, 6)).astype(np.float32))
    target = tf.constant(np.arange(6, dtype=np.float32))
    with tf.GradientTape(persistent=True) as tape:
      ids, one_hot = token_sampling.gumbel_softmax_sample(logits, 0.5, [5, 6], True)
      loss = tf.reduce_sum(one_hot * target)
      hard_ids, none = token_sampling.gumbel_softmax_sample(logits, 0.5, [5, 6])
    self.assertIsNone(none)
    self.assertAllEqual(ids, hard_ids)
    self.assertAllEqual(tf.one_hot(ids, 6), one_hot)
    self.assertGreater(float(tf.reduce_sum(tf.abs(tape.gradient(loss, logits)))), 0)
    self.assertIsNone(tape.gradient(tf.cast(hard_ids, tf.float32), logits))


class ReplaceMaskedTokensTest(tf.test.TestCase):

  def test_original_and_corrupted_sequences(self):
    word_ids = tf.constant([[2, 4, 7, 4, 3], [2, 8, 4, 3, 0]])
    positions = tf.constant([[1, 3], [2, 0]])
    weights = tf.constant([[1.0, 1.0], [1.0, 0.0]])
    original, corrupted = token_sampling.replace_masked_tokens(
        word_ids, positions, weights, tf.constant([[10, 11], [12, 0]]),
        tf.constant([[20, 11], [22, 99]]))
    self.assertAllEqual([[2, 10, 7, 11, 3], [2, 8, 12, 3, 0]], original)
    # The padded slot (weight 0) at position 0 leaves [CLS] alone.
    self.assertAllEqual([[2, 20, 7, 11, 3], [2, 8, 22, 3, 0]], corrupted)


if __name__ == '__main__':
  tf.test.main()
