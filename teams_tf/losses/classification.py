"""Token-level classification losses: masked LM (TEAMS/ELECTRA Eq. 1) and RTD (Eq. 4).

The papers write each loss as an expected *sum* over positions. Like BERT and ELECTRA's
reference code we normalise by the number of contributing positions (a weighted mean), so a
loss does not grow with sequence length or batch size; the TEAMS loss weights λ1=5, λ2=2 were
chosen "to ensure different loss terms are of the same scale" (Appendix B), which holds for
means (MLM ≈ log V, RTD ≈ 0.1–0.7, MWS ≈ log(K + 1)), not for sums over different counts.
All losses are computed in float32 whatever the compute dtype.
"""

import tensorflow as tf

from teams_tf.ops import softmax_cross_entropy


def weighted_mean(values, weights):
  """sum(values * weights) / sum(weights) over the global batch, float32; 0 if no weight.

  Under a distribution strategy with R replicas, each replica returns
  R · sum_local(values · weights) / sum_global(weights): Model Garden divides every replica's
  loss by R before summing the gradients, and Keras averages metrics over replicas, so both see
  exactly the global-batch weighted mean — not the mean of per-replica means, which differs
  whenever replicas hold different numbers of masked tokens. Without a strategy it is the plain
  weighted mean.
  """
  weights = tf.cast(weights, tf.float32)
  count = tf.reduce_sum(weights)
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    count = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.stop_gradient(count)) / float(
        context.num_replicas_in_sync)
  return tf.math.divide_no_nan(tf.reduce_sum(tf.cast(values, tf.float32) * weights), count)


def masked_lm_loss(logits, labels, weights):
  """Masked language modelling loss, TEAMS Eq. (1) (= BERT MLM, ELECTRA generator).

  -log P_G(x_i | x^M) with P_G the softmax of Eq. (2), averaged over masked positions.

  Args:
    logits: [B, P, V] float scores over the vocabulary at the masked positions.
    labels: [B, P] int original token ids x_i.
    weights: [B, P] float, 0 for padded prediction slots.

  Returns:
    Scalar float32: weighted mean of the per-position cross-entropy (computed in float32); 0 if
    all weights are 0; NaN if a label is outside [0, V).
  """
  per_position = softmax_cross_entropy.sparse_softmax_cross_entropy(logits, labels)
  return weighted_mean(per_position, weights)


def rtd_loss(logits, labels, weights):
  """Replaced token detection loss, TEAMS Eq. (4) with P_D from Eq. (3)/(6).

  P_D(x^R_i = x_i) = sigmoid(logit_i) is the probability that token i is *original*, so the
  loss is -log P_D on original tokens and -log(1 - P_D) on replaced ones, averaged over
  every non-padding token.

  Args:
    logits: [B, T] float log-odds that the token is original.
    labels: [B, T] float, 1.0 where x^R_i = x_i (original), 0.0 where replaced.
    weights: [B, T] float or int input mask, 0 for padding.

  Returns:
    Scalar float32: weighted mean binary cross-entropy; 0 if all weights are 0.
  """
  per_token = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.float32), logits=tf.cast(logits, tf.float32))
  return weighted_mean(per_token, weights)
