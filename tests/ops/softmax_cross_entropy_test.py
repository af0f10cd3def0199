"""The fused cross-entropy computes tf.nn's value and gradient, checked against NumPy."""

import numpy as np
import tensorflow as tf

from teams_tf.ops import softmax_cross_entropy


def _value_and_gradient(logits, labels, upstream):
  logits = tf.constant(logits)
  with tf.GradientTape() as tape:
    tape.watch(logits)
    loss = softmax_cross_entropy.sparse_softmax_cross_entropy(logits, labels)
    total = tf.reduce_sum(loss * upstream)
  return loss, tape.gradient(total, logits)


def _numpy_value_and_gradient(logits, labels, upstream):
  """-log softmax at the label and upstream · (softmax - one_hot), in float64."""
  shifted = logits.astype(np.float64) - logits.max(-1, keepdims=True)
  log_softmax = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  loss = -np.take_along_axis(log_softmax, labels[..., None], -1)[..., 0]
  one_hot = np.eye(logits.shape[-1])[labels]
  return loss, upstream[..., None] * (np.exp(log_softmax) - one_hot)


class SparseSoftmaxCrossEntropyTest(tf.test.TestCase):

  def test_value_and_gradient_match_numpy(self):
    rng = np.random.default_rng(0)
    # Scores up to ~100 in size: an unshifted exp would overflow float32.
    logits = (30 * rng.normal(size=(3, 4, 37))).astype(np.float32)
    labels = rng.integers(0, 37, size=(3, 4))
    upstream = rng.normal(size=(3, 4)).astype(np.float32)
    loss, gradient = _value_and_gradient(logits, labels, upstream)
    expected_loss, expected_gradient = _numpy_value_and_gradient(logits, labels, upstream)
    self.assertEqual(tf.float32, loss.dtype)
    self.assertAllClose(expected_loss, loss, rtol=1e-5, atol=1e-4)
    self.assertAllClose(expected_gradient, gradient, rtol=1e-5, atol=1e-6)

  def test_matches_tensorflows_op(self):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(50, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, size=50)
    upstream = rng.normal(size=50).astype(np.float32)
    loss, gradient = _value_and_gradient(logits, labels, upstream)
    reference = tf.constant(logits)
    with tf.GradientTape() as tape:
      tape.watch(reference)
      expected = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=reference)
      total = tf.reduce_sum(expected * upstream)
    self.assertAllClose(expected, loss, rtol=1e-6, atol=1e-6)
    self.assertAllClose(tape.gradient(total, reference), gradient, rtol=1e-6, atol=1e-8)

  def test_bfloat16_logits_read_in_float32_gradient_in_bfloat16(self):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(6, 50)).astype(np.float32)
    labels = rng.integers(0, 50, size=6)
    upstream = np.ones(6, np.float32)
    rounded = tf.cast(tf.cast(logits, tf.bfloat16), tf.float32).numpy()
    loss, gradient = _value_and_gradient(tf.cast(logits, tf.bfloat16), labels, upstream)
    expected_loss, expected_gradient = _numpy_value_and_gradient(rounded, labels, upstream)
    self.assertEqual((tf.float32, tf.bfloat16), (loss.dtype, gradient.dtype))
    self.assertAllClose(expected_loss, loss, rtol=1e-5, atol=1e-5)  # float32 math
    self.assertAllClose(expected_gradient, tf.cast(gradient, tf.float32), atol=4e-3)

  def test_out_of_range_label_gives_nan_only_on_its_row(self):
    logits = tf.zeros([4, 5])
    loss = softmax_cross_entropy.sparse_softmax_cross_entropy(logits, [0, 5, -1, 4])
    self.assertAllClose([np.log(5), np.nan, np.nan, np.log(5)], loss)

  def test_unknown_batch_shape_inside_tf_function(self):
    @tf.function(input_signature=[tf.TensorSpec([None, None, 7]), tf.TensorSpec([None, None],
                                                                                tf.int32)])
    def loss(logits, labels):
      return softmax_cross_entropy.sparse_softmax_cross_entropy(logits, labels)

    logits = np.random.default_rng(3).normal(size=(2, 3, 7)).astype(np.float32)
    labels = np.array([[0, 1, 2], [3, 4, 6]], np.int32)
    self.assertAllClose(_numpy_value_and_gradient(logits, labels, np.ones((2, 3)))[0],
                        loss(logits, labels), rtol=1e-5)


if __name__ == '__main__':
  tf.test.main()
