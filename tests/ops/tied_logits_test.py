"""The output layer's logits h·Wᵀ + b and their gradients against NumPy."""

import numpy as np
import tensorflow as tf

from teams_tf.ops import tied_logits


class TiedLogitsTest(tf.test.TestCase):

  def test_logits_and_gradients_match_numpy(self):
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(6, 4)).astype(np.float32)
    table = tf.Variable(rng.normal(size=(9, 4)).astype(np.float32))
    bias = tf.Variable(rng.normal(size=9).astype(np.float32))
    upstream = rng.normal(size=(6, 9))
    hidden_tensor = tf.constant(hidden)
    with tf.GradientTape() as tape:
      tape.watch(hidden_tensor)
      logits = tied_logits.tied_logits(hidden_tensor, table, bias)
      loss = tf.reduce_sum(logits * tf.constant(upstream, tf.float32))
    d_hidden, d_table, d_bias = tape.gradient(loss, [hidden_tensor, table, bias])
    self.assertEqual(tf.float32, logits.dtype)
    w, b = table.numpy().astype(np.float64), bias.numpy().astype(np.float64)
    self.assertAllClose(hidden.astype(np.float64) @ w.T + b, logits, rtol=1e-5, atol=1e-5)
    # d/dh = G W, d/dW = Gᵀ h, d/db = Σ_n G_n for upstream G [N, V].
    self.assertAllClose(upstream @ w, d_hidden, rtol=1e-5, atol=1e-5)
    self.assertAllClose(upstream.T @ hidden, d_table, rtol=1e-5, atol=1e-5)
    self.assertAllClose(upstream.sum(0), d_bias, rtol=1e-5, atol=1e-5)

  def test_bfloat16_hidden_gives_float32_logits_and_gradients_of_each_dtype(self):
    rng = np.random.default_rng(1)
    hidden = tf.constant(rng.normal(size=(5, 3)), tf.bfloat16)
    table = tf.Variable(rng.normal(size=(7, 3)).astype(np.float32))
    bias = tf.Variable(np.zeros(7, np.float32))
    with tf.GradientTape() as tape:
      tape.watch(hidden)
      logits = tied_logits.tied_logits(hidden, table, bias)
      loss = tf.reduce_sum(logits)
    gradients = tape.gradient(loss, [hidden, table, bias])
    self.assertEqual(tf.float32, logits.dtype)
    self.assertEqual([tf.bfloat16, tf.float32, tf.float32], [g.dtype for g in gradients])
    self.assertAllClose(np.full(7, 5.0), gradients[2])


if __name__ == '__main__':
  tf.test.main()
