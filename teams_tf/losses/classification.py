"""Token-level classification losses: masked LM (TEAMS/ELECTRA Eq. 1) and RTD (Eq. 4).

The papers write each loss as an expected *sum* over positions. Like BERT and ELECTRA's
reference code we normalise by the number of contributing positions (a weighted mean), so a
loss does not grow with sequence length or batch size; the TEAMS loss weights λ1=5, λ2=2 were
chosen "to ensure different loss terms are of the same scale" (Appendix B), which holds for
means (MLM ≈ log V, RTD ≈ 0.1–0.7, MWS ≈ log(K + 1)), not for sums over different counts.
All losses are computed in float32 whatever the compute dtype.
"""

import tensorflow as tf


def weighted_mean(values, weights):
  """sum(values * weights) / sum(weights) in float32; 0 when every weight is 0."""
  weights = tf.cast(weights, tf.float32)
  return tf.math.divide_no_nan(
      tf.reduce_sum(values * weights), tf.reduce_sum(weights))


def masked_lm_loss(logits, labels, weights):
  """Masked language modelling loss, TEAMS Eq. (1) (= BERT MLM, ELECTRA generator).

  -log P_G(x_i | x^M) with P_G the softmax of Eq. (2), averaged over masked positions.

  Args:
    logits: [B, P, V] float scores over the vocabulary at the masked positions.
    labels: [B, P] int original token ids x_i.
    weights: [B, P] float, 0 for padded prediction slots.

  Returns:
    Scalar float32: weighted mean of the per-position cross-entropy; 0 if all weights are 0.
  """
  logits = tf.cast(logits, tf.float32)
  per_position = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=logits)
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
