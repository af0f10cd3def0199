"""Checks MLM (Eq. 1) and RTD (Eq. 4) losses against NumPy written from the equations."""

import numpy as np
import tensorflow as tf

from teams_tf.losses import classification


def _np_log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


class ClassificationLossTest(tf.test.TestCase):

  def test_masked_lm_loss_matches_eq1(self):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 4, 11)).astype(np.float32) * 3
    labels = rng.integers(0, 11, size=(3, 4))
    weights = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], np.float32)
    log_p = _np_log_softmax(logits.astype(np.float64))
    nll = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    expected = (nll * weights).sum() / weights.sum()
    got = classification.masked_lm_loss(logits, labels, weights)
    self.assertAllClose(expected, got, rtol=1e-5)

  def test_rtd_loss_matches_eq4(self):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 7)).astype(np.float32) * 4
    labels = rng.integers(0, 2, size=(2, 7)).astype(np.float32)  # 1 = original.
    mask = np.ones((2, 7), np.float32)
    mask[1, 5:] = 0
    p_original = 1 / (1 + np.exp(-logits.astype(np.float64)))
    per_token = np.where(labels == 1, -np.log(p_original), -np.log(1 - p_original))
    expected = (per_token * mask).sum() / mask.sum()
    got = classification.rtd_loss(logits, labels, mask)
    self.assertAllClose(expected, got, rtol=1e-5)

  def test_padding_does_not_change_the_loss(self):
    logits = tf.constant([[2.0, -1.0, 30.0]])
    labels = tf.constant([[1.0, 0.0, 0.0]])
    with_padding = classification.rtd_loss(logits, labels, [[1, 1, 0]])
    without = classification.rtd_loss(logits[:, :2], labels[:, :2], [[1, 1]])
    self.assertAllClose(with_padding, without)

  def test_all_zero_weights_give_zero_not_nan(self):
    self.assertEqual(
        0.0, float(classification.masked_lm_loss(tf.zeros([1, 2, 5]), [[1, 2]], [[0., 0.]])))
    self.assertEqual(0.0, float(classification.rtd_loss(tf.zeros([1, 3]), tf.ones([1, 3]),
                                                        tf.zeros([1, 3]))))

  def test_bfloat16_logits_give_float32_loss(self):
    logits = tf.cast(tf.random.normal([2, 3, 9]), tf.bfloat16)
    loss = classification.masked_lm_loss(logits, tf.ones([2, 3], tf.int32), tf.ones([2, 3]))
    self.assertEqual(tf.float32, loss.dtype)


if __name__ == '__main__':
  tf.test.main()
