"""Dropout, layer normalization and GELU as one XLA kernel per pass.

TensorFlow runs every elementwise op of these layers as its own kernel over the whole activation:
tf_keras's `Dropout` is RandomUniform, GreaterEqual, Mul and SelectV2 forward and two more ops
backward; Model Garden's `LayerNormalization`s (epsilon 1e-12, below what `fused_batch_norm`
accepts) take the composite `tf.nn.moments` path, a dozen ops each way; the tanh GELU of the
[B, T, 4H] feed-forward activation is another dozen. In ELECTRA-small under bfloat16 on a 2-core
CPU they took about 45% of the step's kernel time, the matmuls 21% (`tools/profile_step.py`).
Here each is one `tf.function(jit_compile=True)` forward and one backward (`tf.custom_gradient`),
while the matmuls stay on TensorFlow's oneDNN kernels (XLA's CPU dots are several times slower:
`benchmarks/pretrain_levers.md`).

The math is that of the layers replaced: inverted dropout (keep with probability 1 - rate, scale
kept values by 1 / (1 - rate)); layer normalization with the biased variance of `tf.nn.moments`;
GELU's tanh approximation, `official.modeling.activations.gelu` (Hendrycks & Gimpel 2016,
§2; BERT's and ELECTRA's). Dropout draws its mask from a counter-based (Threefry) stream keyed by
a per-call seed and recomputes it in the backward pass rather than keeping it. Layer norm and
GELU compute in float32 whatever the input dtype and return the input dtype.

`layers/fused_layers.py` puts these kernels inside Model Garden's built layers.
"""

import numpy as np
import tensorflow as tf
import tf_keras

# GELU's tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
_GELU_SCALE = float(np.sqrt(2.0 / np.pi))
_GELU_CUBIC = 0.044715


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_forward(x):
  dtype = x.dtype
  x = tf.cast(x, tf.float32)
  return tf.cast(0.5 * x * (1.0 + tf.tanh(_GELU_SCALE * (x + _GELU_CUBIC * x * x * x))), dtype)


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_backward(x, dy):
  dtype = dy.dtype
  x, dy = tf.cast(x, tf.float32), tf.cast(dy, tf.float32)
  x2 = x * x
  t = tf.tanh(_GELU_SCALE * x * (1.0 + _GELU_CUBIC * x2))
  slope = (0.5 * (1.0 + t)
           + 0.5 * x * (1.0 - t * t) * _GELU_SCALE * (1.0 + 3.0 * _GELU_CUBIC * x2))
  return tf.cast(dy * slope, dtype)


@tf_keras.utils.register_keras_serializable(package='teams_tf')
@tf.custom_gradient
def gelu(x):
  """GELU, tanh approximation, as `official.modeling.activations.gelu`; any shape, float dtype."""
  def grad(dy):
    return _gelu_backward(x, dy)
  return _gelu_forward(x), grad


@tf.function(jit_compile=True, reduce_retracing=True)
def _masked(x, seed, rate):
  """x * keep / (1 - rate), keep ~ Bernoulli(1 - rate) i.i.d. from the Threefry stream of `seed`."""
  # Integer threshold on 32 random bits: exact to 2^-32, no float conversion per element.
  bits = tf.random.stateless_uniform(tf.shape(x), seed, minval=None, maxval=None,
                                     dtype=tf.uint32, alg='threefry')
  threshold = tf.cast(tf.math.round(rate * 2.0**32), tf.uint32)
  return tf.where(bits >= threshold, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros_like(x))


def dropout(x, rate, seed):
  """Inverted dropout of x with a given [2] int64 seed; the backward pass redraws the same mask.

  Args:
    x: float tensor, any shape.
    rate: Python float in (0, 1), the probability of zeroing an element.
    seed: [2] int64 tensor; equal seeds give equal masks.

  Returns:
    Tensor like x.
  """
  rate = tf.constant(rate, tf.float32)

  @tf.custom_gradient
  def apply(x):
    return _masked(x, seed, rate), lambda dy: _masked(dy, seed, rate)
  return apply(x)


@tf.function(jit_compile=True, reduce_retracing=True)
def _normalized(x, epsilon):
  """(x - mean) / sqrt(var + epsilon) and 1 / sqrt(var + epsilon) over the last axis, float32."""
  x = tf.cast(x, tf.float32)
  mean = tf.reduce_mean(x, axis=-1, keepdims=True)
  centered = x - mean
  inverse_std = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True)
                              + epsilon)
  return centered * inverse_std, inverse_std


@tf.function(jit_compile=True, reduce_retracing=True)
def _layer_norm_forward(x, gamma, beta, epsilon):
  normalized, _ = _normalized(x, epsilon)
  return tf.cast(normalized * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32), x.dtype)


@tf.function(jit_compile=True, reduce_retracing=True)
def _layer_norm_backward(x, gamma, beta, epsilon, dy):
  normalized, inverse_std = _normalized(x, epsilon)
  dy = tf.cast(dy, tf.float32)
  reduce_axes = tf.range(tf.rank(x) - 1)
  dgamma = tf.reduce_sum(dy * normalized, axis=reduce_axes)
  dbeta = tf.reduce_sum(dy, axis=reduce_axes)
  dnormalized = dy * tf.cast(gamma, tf.float32)
  dx = inverse_std * (dnormalized - tf.reduce_mean(dnormalized, axis=-1, keepdims=True)
                      - normalized * tf.reduce_mean(dnormalized * normalized, axis=-1,
                                                    keepdims=True))
  return tf.cast(dx, x.dtype), tf.cast(dgamma, gamma.dtype), tf.cast(dbeta, beta.dtype)


def layer_norm(x, gamma, beta, epsilon):
  """Layer normalization over the last axis, computed in float32.

  Args:
    x: [..., H] float tensor.
    gamma, beta: [H] float scale and offset.
    epsilon: Python float added to the variance.

  Returns:
    [..., H] in x's dtype: (x - mean) / sqrt(var + epsilon) * gamma + beta, biased variance.
  """
  epsilon = tf.constant(epsilon, tf.float32)

  @tf.custom_gradient
  def apply(x, gamma, beta):
    def grad(dy):
      return _layer_norm_backward(x, gamma, beta, epsilon, dy)
    return _layer_norm_forward(x, gamma, beta, epsilon), grad
  return apply(x, gamma, beta)
