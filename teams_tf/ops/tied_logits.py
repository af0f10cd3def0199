"""The output layer's logits h·Wᵀ + b in float32, with the weight and bias gradients in one product.

Autodiff of `matmul(h, W, transpose_b=True)` computes the table gradient as gᵀ·h ([V, N] x [N, E],
a transposed [N, V] operand) and the bias gradient as a separate reduction over the [N, V]
upstream gradient. At the BERT-mini shapes on a 2-core AMD EPYC with oneDNN (B·P = 1,600 rows,
E = 128, V = 7,899) the first alone took 51-54 ms a step; ([h, 1]ᵀ·g)ᵀ, one [E + 1, N] x [N, V]
product transposed, gives both in 33-41 ms (`benchmarks/pretrain_levers.md`).
"""

import tensorflow as tf


@tf.custom_gradient
def _tied_logits(hidden, embedding_table, bias):
  """[N, V] float32 hidden · tableᵀ + bias for [N, E] hidden, [V, E] table, [V] bias."""
  scores = tf.matmul(hidden, embedding_table, transpose_b=True)
  logits = tf.cast(scores, tf.float32) + tf.cast(bias, tf.float32)

  def grad(upstream):
    upstream = tf.cast(upstream, hidden.dtype)  # What autodiff of the cast would pass on.
    d_hidden = tf.matmul(upstream, embedding_table)  # [N, E]
    # The bias gradient Σ_n g_nv is the product's row for a column of ones: it accumulates
    # inside the product (float32), where a bfloat16 BiasAddGrad over N rows stagnates.
    augmented = tf.concat([hidden, tf.ones_like(hidden[:, :1])], axis=1)  # [N, E + 1]
    d_table_and_bias = tf.transpose(tf.matmul(augmented, upstream, transpose_a=True))  # [V, E+1]
    return (d_hidden, d_table_and_bias[:, :-1],
            tf.cast(d_table_and_bias[:, -1], bias.dtype))

  return logits, grad


def tied_logits(hidden, embedding_table, bias):
  """Logits of an output layer over a [V, E] table (BERT's tied MLM decoder): h·Wᵀ + b.

  The same values as `tf.cast(tf.matmul(hidden, table, transpose_b=True), tf.float32) + bias`,
  with the bias added in float32; the gradients are the same products computed in a faster
  layout (module docstring).

  Args:
    hidden: [N, E] transformed encoder outputs, in the compute dtype.
    embedding_table: [V, E] output embeddings W (cast to the dtype of `hidden`).
    bias: [V] output bias b.

  Returns:
    [N, V] float32 logits; differentiable w.r.t. all inputs.
  """
  return _tied_logits(hidden, tf.cast(embedding_table, hidden.dtype), tf.convert_to_tensor(bias))
