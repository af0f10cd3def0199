"""Property tests of the TEAMS candidate-set sampler (paper §3.2, Figure 5)."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.layers import candidate_sampler


class CandidateSamplerTest(tf.test.TestCase, parameterized.TestCase):

  def _draw(self, sampler, logits, original_ids, seed):
    out = sampler(logits, original_ids, seed=tf.constant([seed, 7]))
    return out['replaced_ids'].numpy(), out['negative_ids'].numpy()

  @parameterized.named_parameters(('sampled', 'sampled', 128), ('hardest', 'hardest', 128),
                                  ('sampled_blocks_of_4', 'sampled', 4))
  def test_k_distinct_non_original_ids(self, strategy, block_size):
    sampler = candidate_sampler.CandidateSampler(num_negatives=5, strategy=strategy,
                                                 block_size=block_size)
    logits = tf.random.normal([4, 6, 30], seed=1) * 3
    original = tf.random.uniform([4, 6], 0, 30, tf.int32, seed=2)
    for seed in range(20):
      replaced, negatives = self._draw(sampler, logits, original, seed)
      self.assertEqual((4, 6), replaced.shape)
      self.assertEqual((4, 6, 5), negatives.shape)
      for row, orig in zip(negatives.reshape(-1, 5), original.numpy().reshape(-1)):
        self.assertLen(set(row.tolist()), 5)
        self.assertNotIn(orig, row)
      self.assertTrue(np.all((negatives >= 0) & (negatives < 30)))

  def test_original_never_a_negative_even_when_it_dominates(self):
    sampler = candidate_sampler.CandidateSampler(num_negatives=3)
    logits = tf.one_hot([[5, 6]], 10) * 50.0  # The original holds ~all probability mass.
    for seed in range(10):
      replaced, negatives = self._draw(sampler, logits, tf.constant([[5, 6]]), seed)
      self.assertAllEqual([[5, 6]], replaced)  # x̂ may (here: must) equal the original.
      self.assertNotIn(5, negatives[0, 0])
      self.assertNotIn(6, negatives[0, 1])

  def test_hardest_is_top_k_non_original(self):
    sampler = candidate_sampler.CandidateSampler(num_negatives=4, strategy='hardest')
    logits = np.random.default_rng(0).normal(size=(3, 5, 40)).astype(np.float32)
    original = np.argsort(-logits, -1)[..., 1]  # The original is the 2nd most likely.
    _, negatives = self._draw(sampler, logits, original, 0)
    masked = logits.copy()
    np.put_along_axis(masked, original[..., None], -np.inf, -1)
    expected = np.sort(np.argsort(-masked, -1)[..., :4], -1)
    self.assertAllEqual(expected, np.sort(negatives, -1))

  @parameterized.named_parameters(('one_block', 128), ('blocks_of_2', 2))
  def test_replacement_frequencies_follow_generator_distribution(self, block_size):
    sampler = candidate_sampler.CandidateSampler(num_negatives=1, block_size=block_size)
    probs = np.array([0.5, 0.3, 0.15, 0.05])
    logits = tf.constant(np.log(np.tile(probs, (1000, 1)))[None], tf.float32)
    counts = np.zeros(4)
    for seed in range(10):
      replaced, _ = self._draw(sampler, logits, tf.zeros([1, 1000], tf.int32), seed)
      counts += np.bincount(replaced.reshape(-1), minlength=4)
    freq = counts / counts.sum()
    # 10k draws: binomial standard error <= 0.005; allow 4 sigma.
    self.assertAllClose(probs, freq, atol=0.02)

  @parameterized.named_parameters(('one_block', 128), ('blocks_of_2', 2))
  def test_negatives_sampled_without_replacement_from_renormalised_generator(self, block_size):
    # Original = token 0. With K = 1, the negative must follow P_G renormalised over 1..3.
    sampler = candidate_sampler.CandidateSampler(num_negatives=1, block_size=block_size)
    probs = np.array([0.4, 0.3, 0.2, 0.1])
    logits = tf.constant(np.log(np.tile(probs, (1000, 1)))[None], tf.float32)
    counts = np.zeros(4)
    for seed in range(10):
      _, negatives = self._draw(sampler, logits, tf.zeros([1, 1000], tf.int32), seed)
      counts += np.bincount(negatives.reshape(-1), minlength=4)
    self.assertEqual(0, counts[0])
    self.assertAllClose(probs[1:] / probs[1:].sum(), counts[1:] / counts.sum(), atol=0.02)

  @parameterized.named_parameters(('one_block', 128), ('blocks_of_2', 2))
  def test_second_negative_follows_sequential_sampling(self, block_size):
    # Without replacement, P(second pick = j | first = i) = p_j / (1 - p_i); the marginal
    # inclusion of the rare token 3 in a K = 2 set is what a with-replacement sampler gets wrong.
    sampler = candidate_sampler.CandidateSampler(num_negatives=2, block_size=block_size)
    p = np.array([0.0, 0.6, 0.3, 0.1])  # Token 0 is the original.
    logits = tf.constant(np.log(np.tile(np.maximum(p, 1e-30), (2000, 1)))[None], tf.float32)
    included = 0
    for seed in range(5):
      _, negatives = self._draw(sampler, logits, tf.zeros([1, 2000], tf.int32), seed)
      included += np.any(negatives[0] == 3, -1).sum()
    # P(3 in set) = p3 + p1 p3/(1-p1) + p2 p3/(1-p2) = 0.1 + 0.15 + 0.042857.
    expected = 0.1 + 0.6 * 0.1 / 0.4 + 0.3 * 0.1 / 0.7
    self.assertAllClose(expected, included / 10000, atol=0.02)

  @parameterized.named_parameters(('one_block', 128), ('blocks_of_2', 2))
  def test_joint_law_of_replacement_and_candidate_set_is_two_independent_draws(self, block_size):
    # The paper draws x̂ ~ P_G and, separately, K non-original tokens from P_G without
    # replacement. Over a 5-token vocabulary with K = 2, the 5 x 6 cells (x̂, unordered set)
    # must have probability P_G(x̂) · P(set), P({a, b}) = q_a q_b / (1 - q_a) + q_b q_a / (1 - q_b)
    # with q = P_G renormalised over the non-original tokens (K sequential draws). A chi-square
    # test over 20,000 draws; a with-replacement sampler, or one that reused the replacement's
    # noise for the set, fails it by far.
    probs = np.array([0.35, 0.3, 0.2, 0.1, 0.05])  # Token 0 is the original.
    rows = 4000
    sampler = candidate_sampler.CandidateSampler(num_negatives=2, block_size=block_size)
    logits = tf.constant(np.log(np.tile(probs, (rows, 1)))[None], tf.float32)
    q = probs[1:] / probs[1:].sum()
    sets = [(a, b) for a in range(1, 5) for b in range(a + 1, 5)]
    set_probs = [q[a - 1] * q[b - 1] / (1 - q[a - 1]) + q[b - 1] * q[a - 1] / (1 - q[b - 1])
                 for a, b in sets]
    self.assertAllClose(1.0, sum(set_probs))
    counts = np.zeros((5, len(sets)))
    for seed in range(5):
      replaced, negatives = self._draw(sampler, logits, tf.zeros([1, rows], tf.int32), seed)
      for r, pair in zip(replaced[0], np.sort(negatives[0], -1)):
        counts[r, sets.index(tuple(pair))] += 1
    expected = np.outer(probs, set_probs) * counts.sum()
    chi_square = ((counts - expected)**2 / expected).sum()
    # 99.99% quantile of chi-square with 29 degrees of freedom (Wilson-Hilferty): ~63.
    dof, z = counts.size - 1, 3.719
    critical = dof * (1 - 2 / (9 * dof) + z * np.sqrt(2 / (9 * dof)))**3
    self.assertLess(chi_square, critical)

  def test_same_seed_same_samples_other_seed_differs(self):
    sampler = candidate_sampler.CandidateSampler(num_negatives=3)
    logits = tf.random.normal([2, 3, 50], seed=3)
    original = tf.zeros([2, 3], tf.int32)
    first = self._draw(sampler, logits, original, 4)
    again = self._draw(sampler, logits, original, 4)
    other = self._draw(sampler, logits, original, 5)
    self.assertAllEqual(first[1], again[1])
    self.assertAllEqual(first[0], again[0])
    self.assertNotAllEqual(first[1], other[1])

  def test_no_gradient_through_sampling(self):
    sampler = candidate_sampler.CandidateSampler(num_negatives=2)
    logits = tf.Variable(tf.random.normal([1, 2, 10]))
    with tf.GradientTape() as tape:
      out = sampler(logits, tf.zeros([1, 2], tf.int32), seed=tf.constant([1, 2]))
      total = tf.reduce_sum(tf.cast(out['negative_ids'], tf.float32)) + tf.reduce_sum(
          tf.cast(out['replaced_ids'], tf.float32))
    self.assertIsNone(tape.gradient(total, logits))

  def test_bfloat16_logits(self):
    sampler = candidate_sampler.CandidateSampler(num_negatives=2)
    logits = tf.cast(tf.random.normal([2, 2, 10]), tf.bfloat16)
    out = sampler(logits, tf.zeros([2, 2], tf.int32), seed=tf.constant([1, 2]))
    self.assertEqual(tf.int32, out['negative_ids'].dtype)
    self.assertEqual((2, 2, 2), tuple(out['negative_ids'].shape))

  def test_zero_negatives_samples_only_replacements(self):
    # ELECTRA needs x̂ but no candidate sets; x̂ must be the same draw as with K > 0.
    logits = tf.random.normal([2, 3, 10], seed=1)
    ids = tf.zeros([2, 3], tf.int32)
    seed = tf.constant([4, 5])
    electra = candidate_sampler.CandidateSampler(num_negatives=0)(logits, ids, seed=seed)
    teams = candidate_sampler.CandidateSampler(num_negatives=2)(logits, ids, seed=seed)
    self.assertEqual((2, 3, 0), tuple(electra['negative_ids'].shape))
    self.assertAllEqual(teams['replaced_ids'], electra['replaced_ids'])

  def test_invalid_arguments(self):
    with self.assertRaisesRegex(ValueError, 'num_negatives=-1'):
      candidate_sampler.CandidateSampler(num_negatives=-1)
    with self.assertRaisesRegex(ValueError, 'block_size=0'):
      candidate_sampler.CandidateSampler(block_size=0)
    with self.assertRaisesRegex(ValueError, "'best'"):
      candidate_sampler.CandidateSampler(strategy='best')
    with self.assertRaisesRegex(ValueError, 'vocabulary of 4'):
      candidate_sampler.CandidateSampler(num_negatives=4)(
          tf.zeros([1, 1, 4]), tf.zeros([1, 1], tf.int32), seed=tf.constant([1, 2]))

  def test_config_round_trip(self):
    sampler = candidate_sampler.CandidateSampler(num_negatives=7, strategy='hardest',
                                                 block_size=16)
    clone = candidate_sampler.CandidateSampler.from_config(sampler.get_config())
    self.assertEqual(sampler.get_config(), clone.get_config())


if __name__ == '__main__':
  tf.test.main()
