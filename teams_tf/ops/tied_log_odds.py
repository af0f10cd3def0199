"""SCRIPT's tied self-critic scores: log-odds of "original" without keeping [N, V] scores.

Nijkamp et al., §2, Eq. (4-5): the MLM softmax layer read as a discriminator. The loss (Eq. 6)
and the PLL (Eq. 7) on these log-odds are in `losses/self_critic.py`.
"""

import tensorflow as tf


@tf.function(jit_compile=True, reduce_retracing=True)
def _shifted_exponentials(scores, bias):
  """exp(s + b - m) [N, V] in the dtype of `scores`, Σ_v of it [N] and m = max_v(s + b) [N]."""
  shifted = tf.cast(scores, tf.float32) + tf.cast(bias, tf.float32)
  row_max = tf.reduce_max(shifted, axis=-1)
  exponentials = tf.exp(shifted - row_max[:, None])
  return tf.cast(exponentials, scores.dtype), tf.reduce_sum(exponentials, axis=-1), row_max


@tf.custom_gradient
def _tied_log_odds(hidden, embedding_table, bias):
  """[N] float32 logsumexp_v(hidden · W_vᵀ + b_v) for [N, E] hidden, [V, E] W, [V] b."""
  exponentials, total, row_max = _shifted_exponentials(
      tf.matmul(hidden, embedding_table, transpose_b=True), bias)

  def grad(upstream):
    # d/ds_tv = g_t · exp(s_tv + b_v - m_t) / total_t: a row scaling c_t of the stored
    # exponentials, which commutes with the products below, so no pass over [N, V] is needed.
    # The bias gradient Σ_t is a product too: it accumulates in float32, where a bfloat16
    # BiasAddGrad over N = B·T rows stagnates (Σ of 4,096 rows came out 3.5x too small).
    scale = tf.cast(upstream / total, hidden.dtype)[:, None]  # [N, 1]
    d_hidden = tf.matmul(exponentials, embedding_table) * scale  # [N, E]
    scaled = tf.concat([hidden * scale, scale], axis=1)  # [N, E + 1]
    d_table_and_bias = tf.matmul(exponentials, scaled, transpose_a=True)  # [V, E + 1]
    return (d_hidden, d_table_and_bias[:, :-1],
            tf.cast(d_table_and_bias[:, -1], bias.dtype))

  return row_max + tf.math.log(total), grad


def tied_log_odds(hidden, embedding_table, bias):
  """SCRIPT Eq. (4-5): log p(t+) - log p(t-) = logsumexp_v s_tv, s_t = W e_t + b, in float32.

  Augmenting the V softmax logits s_t with a zero logit for "replaced" gives
  p(t+ | x̄) = Σ_v exp(s_tv) / (Σ_v exp(s_tv) + 1) (Eq. 5) and p(t- | x̄) = 1 / (... + 1)
  (Eq. 4), i.e. p(t+) = sigmoid(logsumexp_v s_tv). The scores come from the tied output layer
  (W the input embedding table, b the output bias) at every token, so they are never kept:
  the forward pass stores exp(s_t - max s_t) in the compute dtype (one [N, V] tensor, where
  autodiff of the plain ops keeps the scores, their float32 copy and the exponentials) and
  the backward pass is three matrix products. Summing in float32 keeps it finite when s_t is
  bfloat16 or very large.

  Args:
    hidden: [..., E] float transformed encoder outputs e_t (BERT's MLM transform applied).
    embedding_table: [V, E] tied output embeddings W, dtype of `hidden`.
    bias: [V] output bias b.

  Returns:
    [...] float32 log-odds that each token is original; differentiable w.r.t. all inputs.
  """
  width = hidden.shape[-1]
  log_odds = _tied_log_odds(tf.reshape(hidden, [-1, width]),
                            tf.cast(embedding_table, hidden.dtype), tf.convert_to_tensor(bias))
  return tf.reshape(log_odds, tf.shape(hidden)[:-1])
