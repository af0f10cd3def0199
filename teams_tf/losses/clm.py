"""Corrective language modeling, COCO-LM §3.3 Eq. (2).

L_CLM = λ_copy·L_copy + L_LM. L_copy, the binary cross-entropy of the copy probability
p_copy(1|h_i) = sigmoid(w_copy^T h_i) against 1(x^MLM_i = x^orig_i) over all tokens, is the RTD
loss (`classification.rtd_loss` on the copy logits). This module implements p_LM and L_LM:

  p_LM(x|h_i) = 1(x = x^MLM_i)·p_copy(1|h_i) + p_copy(0|h_i)·softmax(x^T h_i)[x]

in log space (logsumexp of log p_copy and log p_copy(0) + log softmax), so it stays finite when
the compute dtype is bfloat16/float16 and when p_copy saturates. L_LM averages -log p_LM of the
original token over the masked positions, with p_copy under a stop-gradient.
"""

import tensorflow as tf

from teams_tf.losses import classification


def corrective_lm_log_prob(log_vocab, copy_logits, is_input):
  """log p_LM(x|h) of Eq. (2) for given tokens x, elementwise over any shape.

  Args:
    log_vocab: float32 log softmax(x^T h)[x] of the tokens x.
    copy_logits: float32 w_copy^T h (broadcastable to `log_vocab`): the log-odds that the input
      token is original.
    is_input: bool, whether x is the token the main Transformer saw there (x = x^MLM).

  Returns:
    float32 log p_LM, the shape of `log_vocab`; differentiable w.r.t. both float inputs.
  """
  log_copy = tf.math.log_sigmoid(copy_logits)  # log p_copy(1|h)
  log_correct = log_vocab + tf.math.log_sigmoid(-copy_logits)  # log p_copy(0|h)·softmax
  log_copy = tf.broadcast_to(log_copy, tf.shape(log_correct))
  # The copy term exists only where x is the input token itself.
  return tf.where(is_input, tf.reduce_logsumexp(tf.stack([log_copy, log_correct], -1), -1),
                  log_correct)


def corrective_lm_log_probs(lm_logits, copy_logits, input_ids):
  """The full distribution log p_LM(·|h_i) of Eq. (2) over the vocabulary.

  Args:
    lm_logits: [B, P, V] float scores x^T h_i (+ output bias).
    copy_logits: [B, P] float w_copy^T h_i.
    input_ids: [B, P] int x^MLM_i.

  Returns:
    [B, P, V] float32 log-probabilities; they sum to 1 over V.
  """
  log_vocab = tf.nn.log_softmax(tf.cast(lm_logits, tf.float32), axis=-1)
  vocab_ids = tf.range(tf.shape(log_vocab)[-1], dtype=tf.int32)
  is_input = tf.equal(vocab_ids, tf.cast(input_ids, tf.int32)[..., None])  # [B, P, V]
  return corrective_lm_log_prob(
      log_vocab, tf.cast(copy_logits, tf.float32)[..., None], is_input)


def input_token_log_prob(lm_logits, copy_logits, input_ids):
  """log p_LM(x^MLM_i|h_i) of Eq. (2): what the CLM head gives the token it was shown.

  The one-pass sentence score of a kept COCO-LM encoder sums this over a clean sentence. It
  gathers before mixing in the copy term, so it costs one logsumexp over V per position instead
  of the [B, P, V] distribution of `corrective_lm_log_probs`.

  Args:
    lm_logits: [B, P, V] float scores x^T h_i (+ output bias).
    copy_logits: [B, P] float w_copy^T h_i.
    input_ids: [B, P] int x^MLM_i.

  Returns:
    [B, P] float32 log p_LM(x^MLM_i|h_i).
  """
  lm_logits = tf.cast(lm_logits, tf.float32)
  log_vocab = (tf.gather(lm_logits, tf.cast(input_ids, tf.int32), batch_dims=2) -
               tf.reduce_logsumexp(lm_logits, axis=-1))
  return corrective_lm_log_prob(log_vocab, tf.cast(copy_logits, tf.float32),
                                tf.ones_like(log_vocab, dtype=tf.bool))


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
  log_lm = tf.gather(log_probs, original_ids, batch_dims=2)  # [B, P]
  if copy_mechanism:
    copy_logits = tf.cast(copy_logits, tf.float32)
    if stop_gradient:
      copy_logits = tf.stop_gradient(copy_logits)
    is_copy = tf.equal(tf.cast(input_ids, tf.int32), original_ids)
    log_lm = corrective_lm_log_prob(log_lm, copy_logits, is_copy)
  return classification.weighted_mean(-log_lm, weights)
