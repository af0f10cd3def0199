"""Corrective language modeling loss, COCO-LM §3.3 Eq. (2).

L_CLM = λ_copy·L_copy + L_LM. L_copy, the binary cross-entropy of the copy probability
p_copy(1|h_i) = sigmoid(w_copy^T h_i) against 1(x^MLM_i = x^orig_i) over all tokens, is the RTD
loss (`classification.rtd_loss` on the copy logits). This module implements L_LM:

  p_LM(x_i|h_i) = 1(x_i = x^MLM_i)·p_copy^sg(1|h_i) + p_copy^sg(0|h_i)·softmax(x^T h_i)[x_i]

on the masked positions, computed in log space (logsumexp of log p_copy + log softmax), so it
stays finite when the compute dtype is bfloat16/float16 and when p_copy saturates.
"""

import tensorflow as tf

from teams_tf.losses import classification


def corrective_lm_loss(lm_logits, copy_logits, original_ids, input_ids, weights,
                       copy_mechanism=True, stop_gradient=True):
  """L_LM of COCO-LM Eq. (2): -log p_LM(x^orig_i | h_i), averaged over the given positions.

  Args:
    lm_logits: [B, P, V] float scores x^T h_i (+ output bias) over the vocabulary.
    copy_logits: [B, P] float w_copy^T h_i, the log-odds that the input token is original.
    original_ids: [B, P] int x^orig_i.
    input_ids: [B, P] int x^MLM_i, the token the main Transformer saw.
    weights: [B, P] float, 0 for padded slots.
    copy_mechanism: mix the copy probability into p_LM as above (COCO-LM); False gives the
      plain softmax (Table 3 "CLM w/o. Copy").
    stop_gradient: treat p_copy as a constant in this loss (COCO-LM's sg); False lets L_LM
      train the copy logit too (Table 3 "CLM w/o. Stop-grad", and All-Token MLM).

  Returns:
    Scalar float32 weighted mean of -log p_LM; 0 if every weight is 0. Differentiable w.r.t.
    `lm_logits`, and w.r.t. `copy_logits` only when `copy_mechanism` and not `stop_gradient`.
  """
  log_probs = tf.nn.log_softmax(tf.cast(lm_logits, tf.float32), axis=-1)
  original_ids = tf.cast(original_ids, tf.int32)
  log_vocab = tf.gather(log_probs, original_ids, batch_dims=2)  # [B, P]
  if copy_mechanism:
    copy_logits = tf.cast(copy_logits, tf.float32)
    if stop_gradient:
      copy_logits = tf.stop_gradient(copy_logits)
    log_copy = tf.math.log_sigmoid(copy_logits)  # log p_copy(1|h)
    log_correct = tf.math.log_sigmoid(-copy_logits)  # log p_copy(0|h)
    is_copy = tf.equal(tf.cast(input_ids, tf.int32), original_ids)
    # The copy term exists only where the input already is the original token.
    copy_term = tf.where(is_copy, log_copy, tf.fill(tf.shape(log_copy), -float('inf')))
    log_lm = tf.reduce_logsumexp(tf.stack([copy_term, log_correct + log_vocab], -1), -1)
  else:
    log_lm = log_vocab
  return classification.weighted_mean(-log_lm, weights)
