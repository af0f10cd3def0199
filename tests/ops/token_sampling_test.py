"""Gumbel-softmax sampling (SCRIPT Eq. 3) and the write-back of sampled tokens."""

import numpy as np
import tensorflow as tf

from teams_tf.ops import token_sampling


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


def _chi_square_below_critical(test, counts, probs):
  """Asserts a chi-square goodness of fit at the 99.99% level (Wilson-Hilferty quantile)."""
  expected = probs * counts.sum()
  chi_square = ((counts - expected)**2 / expected).sum()
  dof, z = len(counts) - 1, 3.719
  test.assertLess(chi_square, dof * (1 - 2 / (9 * dof) + z * np.sqrt(2 / (9 * dof)))**3)


class BlockedGumbelTest(tf.test.TestCase):
  """Block-wise Gumbel-max and Gumbel-top-k against the exact laws, computed in NumPy."""

  # 37 tokens in blocks of 8: five blocks, the last padded with three -inf entries.
  VOCAB, BLOCK, ROWS = 37, 8, 20000

  def _logits(self):
    return np.random.default_rng(3).normal(size=self.VOCAB).astype(np.float32) * 1.5

  def test_gumbel_max_sample_is_softmax(self):
    logits = self._logits()
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    blocked = token_sampling.block_logits(np.tile(logits, (self.ROWS, 1)), self.BLOCK)
    self.assertEqual((self.ROWS, 5, self.BLOCK), tuple(blocked.blocks.shape))
    ids = token_sampling.gumbel_max_sample(blocked, tf.constant([1, 2])).numpy()
    _chi_square_below_critical(self, np.bincount(ids, minlength=self.VOCAB), probs)

  def test_gumbel_top_k_is_sequential_sampling_without_replacement(self):
    logits = self._logits()
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    blocked = token_sampling.block_logits(np.tile(logits, (self.ROWS, 1)), self.BLOCK)
    ids = token_sampling.gumbel_top_k(blocked, 3, tf.constant([3, 4])).numpy()
    self.assertTrue(all(len(set(row)) == 3 for row in ids))
    self.assertTrue(np.all(ids < self.VOCAB))
    # First pick ~ p; second pick j: sum over first picks i != j of p_i p_j / (1 - p_i).
    _chi_square_below_critical(self, np.bincount(ids[:, 0], minlength=self.VOCAB), probs)
    pair = probs[:, None] * probs[None, :] / (1 - probs[:, None])
    np.fill_diagonal(pair, 0)
    _chi_square_below_critical(self, np.bincount(ids[:, 1], minlength=self.VOCAB),
                               pair.sum(axis=0))

  def test_one_block_draws_like_the_full_vocabulary(self):
    # A block as large as the vocabulary leaves only the in-block draw: the plain Gumbel-top-k.
    logits = tf.constant(np.tile(self._logits(), (4, 1)))
    seed = tf.constant([5, 6])
    ids = token_sampling.gumbel_top_k(token_sampling.block_logits(logits, 64), 4, seed)
    _, inner_seed = tf.unstack(tf.random.experimental.stateless_split(seed, num=2))
    plain = tf.math.top_k(logits + token_sampling.gumbel_noise([4, 64], inner_seed)[:, :37], 4)
    self.assertAllEqual(plain.indices, ids)


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
