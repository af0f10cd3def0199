"""The fused dropout, layer norm and GELU kernels compute what tf_keras / Model Garden compute."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.modeling import activations

from teams_tf.ops import fused_elementwise


def _value_and_gradients(function, inputs, upstream):
  """function(*inputs) and the gradients of sum(function(*inputs) * upstream) w.r.t. inputs."""
  inputs = [tf.constant(value) for value in inputs]
  with tf.GradientTape() as tape:
    tape.watch(inputs)
    outputs = function(*inputs)
    loss = tf.reduce_sum(tf.cast(outputs, tf.float32) * upstream)
  return outputs, tape.gradient(loss, inputs)


class GeluTest(tf.test.TestCase):

  def test_value_and_gradient_match_model_gardens_gelu(self):
    rng = np.random.default_rng(0)
    x = (3 * rng.normal(size=(4, 5, 64))).astype(np.float32)
    upstream = rng.normal(size=x.shape).astype(np.float32)
    fused, (fused_grad,) = _value_and_gradients(fused_elementwise.gelu, [x], upstream)
    plain, (plain_grad,) = _value_and_gradients(activations.gelu, [x], upstream)
    self.assertAllClose(plain, fused, atol=1e-6, rtol=1e-6)
    self.assertAllClose(plain_grad, fused_grad, atol=1e-5, rtol=1e-5)

  def test_keeps_bfloat16(self):
    x = tf.constant(np.linspace(-4, 4, 33), tf.bfloat16)
    y = fused_elementwise.gelu(x)
    self.assertEqual(tf.bfloat16, y.dtype)
    self.assertAllClose(activations.gelu(tf.cast(x, tf.float32)), tf.cast(y, tf.float32),
                        atol=2e-2, rtol=1e-2)


class LayerNormTest(tf.test.TestCase):

  def test_value_and_gradients_match_tf_keras(self):
    rng = np.random.default_rng(1)
    x = (2 + 3 * rng.normal(size=(3, 7, 16))).astype(np.float32)
    gamma = rng.normal(size=16).astype(np.float32)
    beta = rng.normal(size=16).astype(np.float32)
    upstream = rng.normal(size=x.shape).astype(np.float32)
    # Model Garden's epsilon, which keeps tf_keras on its unfused `tf.nn.moments` path.
    epsilon = 1e-12
    plain_layer = tf_keras.layers.LayerNormalization(epsilon=epsilon)
    plain_layer.build(x.shape)
    plain_layer.set_weights([gamma, beta])
    fused_value, fused_grads = _value_and_gradients(
        lambda *args: fused_elementwise.layer_norm(*args, epsilon), [x, gamma, beta], upstream)
    inputs = tf.constant(x)
    with tf.GradientTape() as tape:
      tape.watch(inputs)
      plain_value = plain_layer(inputs)
      loss = tf.reduce_sum(plain_value * upstream)
    plain_grads = tape.gradient(loss, [inputs, plain_layer.gamma, plain_layer.beta])
    self.assertAllClose(plain_value, fused_value, atol=1e-5, rtol=1e-5)
    for name, plain_grad, fused_grad in zip(('x', 'gamma', 'beta'), plain_grads, fused_grads):
      self.assertAllClose(plain_grad, fused_grad, atol=1e-4, rtol=1e-4, msg=name)

  def test_bfloat16_input_normalizes_in_float32(self):
    x = tf.constant([[96.0, 97.0, 98.0, 99.0]], tf.bfloat16)  # Exact in bfloat16.
    y = fused_elementwise.layer_norm(x, tf.ones([4]), tf.zeros([4]), 1e-12)
    self.assertEqual(tf.bfloat16, y.dtype)
    expected = (np.arange(4) - 1.5) / np.sqrt(1.25)
    self.assertAllClose(expected, tf.cast(y, tf.float32)[0], atol=1e-2)


if __name__ == '__main__':
  tf.test.main()
