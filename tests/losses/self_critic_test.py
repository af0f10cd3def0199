"""SCRIPT's self-critic loss (Eq. 6) and PLL (Eq. 7) against NumPy."""

import numpy as np
import tensorflow as tf

from teams_tf.losses import self_critic


def _numpy_log_odds(scores):
  return np.logaddexp.reduce(scores, axis=-1)  # logsumexp_v s_tv.


def _numpy_p_original(scores):
  total = np.exp(scores.astype(np.float64)).sum(-1)
  return total / (total + 1.0)  # Eq. (5).


class SelfCriticTest(tf.test.TestCase):

  def test_loss_matches_numpy_binary_cross_entropy(self):
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(3, 6, 5)) * 2 - 2
    labels = (rng.random((3, 6)) < 0.7).astype(np.float32)
    weights = np.ones((3, 6), np.float32)
    weights[2, 4:] = 0
    p = _numpy_p_original(scores)
    per_token = -(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    expected = (per_token * weights).sum() / weights.sum()
    log_odds = _numpy_log_odds(scores).astype(np.float32)
    got = self_critic.self_critic_loss(log_odds, labels, weights)
    self.assertAllClose(expected, got, rtol=1e-5)

  def test_pseudo_log_likelihood_sums_log_p_original_over_weighted_tokens(self):
    scores = np.random.default_rng(4).normal(size=(2, 4, 6))
    weights = np.array([[0, 1, 1, 0], [0, 1, 1, 1]], np.float32)
    expected = (np.log(_numpy_p_original(scores)) * weights).sum(-1)
    log_odds = _numpy_log_odds(scores).astype(np.float32)
    got = self_critic.pseudo_log_likelihood(log_odds, weights)
    self.assertAllClose(expected, got, rtol=1e-5)


if __name__ == '__main__':
  tf.test.main()
