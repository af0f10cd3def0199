"""Tests of the RTD heads: attention-based (TEAMS §3.2, Eq. 6) and per-token FFN (ELECTRA)."""

import numpy as np
import tensorflow as tf
import tf_keras

from teams_tf.layers import rtd_head
from tests import testing_utils


def _head(**kwargs):
  return rtd_head.AttentionRtdHead(
      num_attention_heads=2, inner_dim=16, output_dropout=0.0, attention_dropout=0.0,
      **kwargs)


class AttentionRtdHeadTest(tf.test.TestCase):

  def test_shapes_and_dtype(self):
    head = _head()
    logits = head(tf.random.normal([3, 5, 8]), tf.ones([3, 5, 5]))
    self.assertEqual((3, 5), tuple(logits.shape))
    self.assertEqual(tf.float32, logits.dtype)

  def test_attends_across_tokens(self):
    # Unlike a per-token FFN head, changing token 0 changes the logit of token 3.
    head = _head()
    x = np.random.default_rng(0).normal(size=(1, 4, 8)).astype(np.float32)
    y = x.copy()
    y[0, 0] += 1.0
    mask = tf.ones([1, 4, 4])
    self.assertNotAllClose(head(x, mask)[0, 3], head(y, mask)[0, 3])

  def test_respects_attention_mask(self):
    head = _head()
    x = np.random.default_rng(1).normal(size=(1, 4, 8)).astype(np.float32)
    y = x.copy()
    y[0, 3] += 5.0  # Token 3 is padding: nobody may attend to it.
    mask = tf.constant([[[1, 1, 1, 0]] * 4], tf.float32)
    self.assertAllClose(head(x, mask)[0, :3], head(y, mask)[0, :3], atol=1e-5)

  def test_every_head_weight_gets_gradient(self):
    head = _head()
    x = tf.random.normal([2, 5, 8])
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(head(x, tf.ones([2, 5, 5])) ** 2)
    grads = tape.gradient(loss, head.trainable_variables)
    self.assertLen(grads, len(head.trainable_variables))
    for var, grad in zip(head.trainable_variables, grads):
      self.assertIsNotNone(grad, var.name)
      self.assertGreater(float(tf.reduce_sum(tf.abs(grad))), 0.0, var.name)

  def test_config_round_trip_gives_identical_outputs(self):
    head = _head(kernel_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
    x, mask = tf.random.normal([2, 5, 8]), tf.ones([2, 5, 5])
    expected = head(x, mask)
    clone = rtd_head.AttentionRtdHead.from_config(head.get_config())
    clone(x, mask)
    clone.set_weights(head.get_weights())
    self.assertAllClose(expected, clone(x, mask))

  def test_mixed_bfloat16(self):
    with testing_utils.keras_policy('mixed_bfloat16'):
      logits = _head()(tf.random.normal([2, 5, 8]), tf.ones([2, 5, 5]))
      self.assertEqual(tf.float32, logits.dtype)



class FfnRtdHeadTest(tf.test.TestCase):

  def test_matches_numpy_dense_gelu_logit(self):
    head = rtd_head.FfnRtdHead(hidden_size=6)
    x = np.random.default_rng(1).normal(size=(2, 3, 8)).astype(np.float32)
    logits = head(tf.constant(x), tf.ones([2, 3, 3])).numpy()
    w1, b1 = (v.numpy() for v in head.dense.weights)
    w2, b2 = (v.numpy() for v in head.classifier.weights)
    hidden = x @ w1 + b1
    # Model Garden's 'gelu' is BERT's tanh approximation.
    hidden = 0.5 * hidden * (1.0 + np.tanh(
        np.sqrt(2.0 / np.pi) * (hidden + 0.044715 * hidden**3)))
    expected = (hidden @ w2 + b2)[..., 0]
    self.assertAllClose(expected, logits, atol=1e-5)
    self.assertEqual(tf.float32, head(tf.constant(x)).dtype)

  def test_scores_each_token_on_its_own(self):
    # Per-token head (TEAMS Figure 2, left): changing token 0 leaves token 3's logit unchanged.
    head = rtd_head.FfnRtdHead(hidden_size=8)
    x = np.random.default_rng(0).normal(size=(1, 4, 8)).astype(np.float32)
    y = x.copy()
    y[0, 0] += 1.0
    before, after = head(tf.constant(x)).numpy(), head(tf.constant(y)).numpy()
    self.assertNotAllClose(before[0, 0], after[0, 0])
    self.assertAllClose(before[0, 1:], after[0, 1:])

  def test_config_round_trip_gives_identical_outputs(self):
    head = rtd_head.FfnRtdHead(hidden_size=8, activation='relu')
    x = tf.random.normal([2, 3, 8])
    expected = head(x)
    clone = rtd_head.FfnRtdHead.from_config(head.get_config())
    clone(x)
    clone.set_weights(head.get_weights())
    self.assertAllClose(expected, clone(x))


if __name__ == '__main__':
  tf.test.main()
