"""Checks the multi-word selection loss (TEAMS Eq. 8) against NumPy."""

import numpy as np
import tensorflow as tf

from teams_tf.losses import mws


class MwsLossTest(tf.test.TestCase):

  def test_matches_eq8(self):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 5, 6)).astype(np.float32) * 2  # K = 5.
    weights = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.float32)
    shifted = logits.astype(np.float64) - logits.max(-1, keepdims=True)
    p_original = np.exp(shifted[..., 0]) / np.exp(shifted).sum(-1)
    expected = (-np.log(p_original) * weights).sum() / weights.sum()
    self.assertAllClose(expected, mws.mws_loss(logits, weights), rtol=1e-5)

  def test_confident_correct_selection_has_near_zero_loss(self):
    logits = tf.constant([[[20.0, 0.0, 0.0]]])
    self.assertLess(float(mws.mws_loss(logits, [[1.0]])), 1e-6)

  def test_uniform_scores_give_log_k_plus_one(self):
    self.assertAllClose(np.log(6.0), mws.mws_loss(tf.zeros([2, 3, 6]), tf.ones([2, 3])))


if __name__ == '__main__':
  tf.test.main()
