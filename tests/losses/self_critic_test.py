"""SCRIPT's self-critic probability, loss (Eq. 4-6) and PLL (Eq. 7) against NumPy."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.losses import self_critic


def _numpy_p_original(scores):
  total = np.exp(scores.astype(np.float64)).sum(-1)
  return total / (total + 1.0)  # Eq. (5).


class SelfCriticTest(tf.test.TestCase, parameterized.TestCase):

  def test_probability_of_original_matches_eq_5(self):
    scores = np.random.default_rng(0).normal(size=(2, 5, 7)).astype(np.float32) * 3
    log_odds = self_critic.self_critic_log_odds(scores).numpy()
    self.assertAllClose(_numpy_p_original(scores), 1 / (1 + np.exp(-log_odds)), rtol=1e-5)
    # Eq. (4): the negative class is the complement.
    total = np.exp(scores.astype(np.float64)).sum(-1)
    self.assertAllClose(1.0 / (total + 1.0), 1 / (1 + np.exp(log_odds)), rtol=1e-5)

  def test_loss_matches_numpy_binary_cross_entropy(self):
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(3, 6, 5)).astype(np.float32) * 2 - 2
    labels = (rng.random((3, 6)) < 0.7).astype(np.float32)
    weights = np.ones((3, 6), np.float32)
    weights[2, 4:] = 0
    p = _numpy_p_original(scores)
    per_token = -(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    expected = (per_token * weights).sum() / weights.sum()
    got = self_critic.self_critic_loss(self_critic.self_critic_log_odds(scores), labels, weights)
    self.assertAllClose(expected, got, rtol=1e-5)

  @parameterized.parameters(tf.bfloat16, tf.float16)
  def test_finite_for_large_scores_in_low_precision(self, dtype):
    # Σ exp(s) overflows float16/bfloat16 (and float32) here; the log-odds do not.
    scores = tf.cast(tf.fill([1, 2, 50], 90.0), dtype)
    log_odds = self_critic.self_critic_log_odds(scores)
    self.assertEqual(tf.float32, log_odds.dtype)
    loss = self_critic.self_critic_loss(log_odds, [[0.0, 1.0]], [[1.0, 1.0]])
    self.assertTrue(np.isfinite(float(loss)))
    self.assertAllClose((90 + np.log(50)) / 2, loss, rtol=1e-2)  # The replaced token's cost.

  def test_pseudo_log_likelihood_sums_log_p_original_over_weighted_tokens(self):
    scores = np.random.default_rng(2).normal(size=(2, 4, 6)).astype(np.float32)
    weights = np.array([[0, 1, 1, 0], [0, 1, 1, 1]], np.float32)
    expected = (np.log(_numpy_p_original(scores)) * weights).sum(-1)
    got = self_critic.pseudo_log_likelihood(self_critic.self_critic_log_odds(scores), weights)
    self.assertAllClose(expected, got, rtol=1e-5)


if __name__ == '__main__':
  tf.test.main()
