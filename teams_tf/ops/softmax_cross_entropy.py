"""Sparse softmax cross-entropy over a vocabulary as one XLA kernel per pass.

TensorFlow's `SparseSoftmaxCrossEntropyWithLogits` kernel was 16.5% of the kernel time of the
BERT-mini step on a 2-core Xeon (66 ms of 294 per step over [1600, 7899] logits; `python
tools/profile_step.py --objective=bert --size=mini --setting=fp32 ...`); the two kernels here
take 29 ms for the same loss and gradient (`benchmarks/pretrain_levers.md`). The forward pass
keeps only the per-row log-sum-exp; the backward pass recomputes the softmax from the logits
instead of keeping a [N, V] gradient from the forward pass.
"""

import tensorflow as tf


@tf.function(jit_compile=True, reduce_retracing=True)
def _forward(logits, labels):
  """[N] float32 -log softmax(logits)[label] (NaN where the label is outside [0, V)), [N] lse."""
  logits = tf.cast(logits, tf.float32)
  vocab_size = tf.shape(logits)[-1]
  row_max = tf.reduce_max(logits, axis=-1)
  log_sum = row_max + tf.math.log(tf.reduce_sum(tf.exp(logits - row_max[:, None]), axis=-1))
  valid = (labels >= 0) & (labels < vocab_size)
  target = tf.gather(logits, tf.clip_by_value(labels, 0, vocab_size - 1), batch_dims=1)
  return tf.where(valid, log_sum - target, float('nan')), log_sum


@tf.function(jit_compile=True, reduce_retracing=True)
def _backward(logits, labels, log_sum, upstream):
  """[N, V] upstream · (softmax(logits) - one_hot(labels)), in the dtype of `logits`."""
  probabilities = tf.exp(tf.cast(logits, tf.float32) - log_sum[:, None])
  one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=tf.float32)
  return tf.cast((probabilities - one_hot) * upstream[:, None], logits.dtype)


def sparse_softmax_cross_entropy(logits, labels):
  """-log softmax(logits)[..., label], computed in float32: tf.nn's op, with faster kernels.

  The value and gradient of `tf.nn.sparse_softmax_cross_entropy_with_logits`. A label outside
  [0, V) gives a NaN loss, as that op gives on GPUs (on CPUs it raises), so training stops at
  its non-finite-loss check instead of learning from a clipped label.

  Args:
    logits: [..., V] float scores (float32 or the compute dtype; read in float32).
    labels: [...] int target ids.

  Returns:
    [...] float32 cross-entropy; differentiable w.r.t. `logits` (gradient in their dtype).
  """
  logits = tf.convert_to_tensor(logits)
  labels = tf.cast(labels, tf.int32)
  rows = tf.reshape(logits, [-1, tf.shape(logits)[-1]])
  row_labels = tf.reshape(labels, [-1])

  @tf.custom_gradient
  def apply(rows):
    loss, log_sum = _forward(rows, row_labels)

    def grad(upstream):
      return _backward(rows, row_labels, log_sum, upstream)
    return loss, grad

  return tf.reshape(apply(rows), tf.shape(labels))
