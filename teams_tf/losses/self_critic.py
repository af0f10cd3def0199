"""SCRIPT's self-critic: the MLM softmax layer read as a discriminator (Nijkamp et al., §2).

`ops/tied_log_odds.py` computes the log-odds of "original" (Eq. 4-5) from the MLM head's
transformed hidden states; the loss (Eq. 6) and the PLL (Eq. 7) here work on them in float32.
"""

import tensorflow as tf

from teams_tf.losses import classification


def self_critic_loss(log_odds, labels, weights):
  """L_Disc of SCRIPT Eq. (6): binary cross-entropy of p(t+), averaged over weighted tokens.

  Args:
    log_odds: [B, T] float `tied_log_odds` of the sampled sequence x̄.
    labels: [B, T] float, 1 where x̄_t = x_t (positive), 0 where replaced.
    weights: [B, T] float or int, 0 for padding.

  Returns:
    Scalar float32 weighted mean of -[y log p(t+) + (1 - y) log p(t-)]; 0 if all weights are 0.
  """
  return classification.rtd_loss(log_odds, labels, weights)


def log_p_original(log_odds):
  """log p(t+ | x) [B, T] float32 of each token, from its tied log-odds (the terms of Eq. 7)."""
  return tf.math.log_sigmoid(tf.cast(log_odds, tf.float32))


def pseudo_log_likelihood(log_odds, weights):
  """SCRIPT's PLL of Eq. (7): Σ_t log p(t+ | x), one forward pass per sequence.

  Args:
    log_odds: [B, T] float `tied_log_odds` of the sequences themselves.
    weights: [B, T] float, 1 for the tokens that count (e.g. not padding, [CLS], [SEP]).

  Returns:
    [B] float32 PLL, ≤ 0.
  """
  return tf.reduce_sum(log_p_original(log_odds) * tf.cast(weights, tf.float32), axis=-1)
