"""Multi-word selection loss, TEAMS Eq. (8) over the candidate-set softmax of Eq. (7)."""

import tensorflow as tf

from teams_tf.losses import classification


def mws_loss(logits, weights):
  """Multi-word selection loss, TEAMS Eq. (8).

  A (K + 1)-way cross-entropy per masked position: the candidate set S_i holds the original
  token in column 0 and K non-original candidates after it.

  Args:
    logits: [B, P, K + 1] float scores e(x')^T h_D^MWS(x^R)_i; column 0 is the original token.
    weights: [B, P] float, 0 for padded prediction slots.

  Returns:
    Scalar float32: weighted mean of -log softmax(logits)[..., 0]; 0 if all weights are 0.
  """
  logits = tf.cast(logits, tf.float32)
  per_position = -tf.nn.log_softmax(logits)[..., 0]
  return classification.weighted_mean(per_position, weights)
