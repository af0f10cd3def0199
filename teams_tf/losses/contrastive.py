"""Contrastive losses: COCO-LM's sequence contrast (§3.3 Eq. 3), TACO's token alignment (Eq. 6-8).

SCL: a batch holds N pairs (X_k^MLM, X_k^crop). Each of the 2N sequences is an anchor whose
positive is its partner and whose negatives are the other 2N - 2 sequences (symmetric contrast);
the score is cos(s, s')/τ. Under a distribution strategy the candidates are the global batch: every
replica gathers the representations of all replicas, and its anchors are its own sequences.
TACO: each token's global semantics g = h - e is contrasted with one positive from its context
and K negatives from other sequences (pairs from `ops/token_pairs.py`).
"""

import tensorflow as tf

from teams_tf.losses import classification
from teams_tf.ops import replica_random


def gather_replicas(values):
  """[N, ...] per replica -> ([R·N, ...] all replicas' values, offset of this replica's rows).

  Outside a distribution strategy (or with one replica) the values themselves and offset 0.
  """
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return values, 0
  offset = replica_random.replica_row_offset(tf.shape(values)[0])
  return context.all_gather(values, axis=0), tf.cast(offset, tf.int32)


def sequence_contrastive_loss(first, second, temperature=1.0):
  """Symmetric InfoNCE over cosine similarities, COCO-LM Eq. (3).

  Args:
    first: [N, H] float sequence representations s of X^MLM (h_[CLS]).
    second: [N, H] float representations of the paired views X^crop; row k pairs with row k.
    temperature: τ (COCO-LM: 1).

  Returns:
    Scalar float32: mean over the 2N local anchors of
    -log(exp(cos(s, s+)/τ) / Σ_{s' ≠ s} exp(cos(s, s')/τ)), the sum running over the global
    batch's other 2·N_global - 1 sequences. Differentiable w.r.t. both inputs (also through the
    other replicas' rows under a strategy).
  """
  local = tf.math.l2_normalize(
      tf.concat([tf.cast(first, tf.float32), tf.cast(second, tf.float32)], 0), axis=-1)
  num_pairs = tf.shape(first)[0]
  gathered_first, offset = gather_replicas(local[:num_pairs])
  gathered_second, _ = gather_replicas(local[num_pairs:])
  candidates = tf.concat([gathered_first, gathered_second], 0)  # [2·N_global, H]
  global_pairs = tf.shape(gathered_first)[0]
  scores = tf.matmul(local, candidates, transpose_b=True) / temperature  # [2N, 2·N_global]
  rows = tf.range(num_pairs) + offset
  own = tf.concat([rows, rows + global_pairs], 0)  # Column of each anchor itself.
  partner = tf.concat([rows + global_pairs, rows], 0)
  # An anchor is not its own negative.
  scores += tf.one_hot(own, 2 * global_pairs, on_value=-1e9, off_value=0.0)
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=partner, logits=scores))


def pair_cosine_similarities(first, second):
  """Mean [CLS] cosine of positive and of negative SCL pairs (COCO-LM Figure 7a's quantity).

  Args:
    first: [N, H] float representations of X^MLM.
    second: [N, H] float representations of the paired views X^crop.

  Returns:
    (positive, negative) float32 scalars over this replica's batch: the mean cos(s_k, s_k^crop)
    and the mean cosine of every other pair of the 2N sequences (the in-batch negatives); the
    negative mean is 0 when N = 1.
  """
  views = tf.math.l2_normalize(
      tf.concat([tf.cast(first, tf.float32), tf.cast(second, tf.float32)], 0), axis=-1)
  num_pairs = tf.shape(first)[0]
  cosines = tf.matmul(views, views, transpose_b=True)  # [2N, 2N]
  rows = tf.range(2 * num_pairs)
  partner = (rows + num_pairs) % (2 * num_pairs)
  is_negative = ~(tf.equal(rows[:, None], rows[None, :]) |
                  tf.equal(partner[:, None], rows[None, :]))
  positive = tf.reduce_mean(tf.gather(cosines, partner, batch_dims=1))
  negative = tf.math.divide_no_nan(
      tf.reduce_sum(tf.where(is_negative, cosines, 0.0)),
      tf.reduce_sum(tf.cast(is_negative, tf.float32)))
  return positive, negative


def token_alignment_contrastive_loss(anchors, positives, negatives, weights, temperature=0.07):
  """Token-alignment contrastive loss, TACO Eq. (6)-(8), over given pairs.

  For each anchor token x with global semantics g_x = h_x - e_x (Eq. 3), one positive g_c from
  its context and K negatives g_c,k from other sequences, with f = cos / τ (Eq. 7):
    L = -log(exp f(g_x, g_c) / (exp f(g_x, g_c) + Σ_k exp f(g_x, g_c,k)))   (Eq. 6),
  averaged over the anchors (Eq. 8: every token of every sequence).

  Args:
    anchors: [N, H] float g_x.
    positives: [N, H] float g_c, row n pairs with anchor n.
    negatives: [N, K, H] float g_c,k.
    weights: [N] float, 0 for anchors without a loss (padding, no positive).
    temperature: τ (TACO: 0.07).

  Returns:
    Scalar float32 weighted mean; 0 if every weight is 0. Differentiable w.r.t. all three
    representations.
  """
  anchors = tf.math.l2_normalize(tf.cast(anchors, tf.float32), axis=-1)
  positives = tf.math.l2_normalize(tf.cast(positives, tf.float32), axis=-1)
  negatives = tf.math.l2_normalize(tf.cast(negatives, tf.float32), axis=-1)
  positive_logits = tf.reduce_sum(anchors * positives, -1, keepdims=True)  # [N, 1]
  negative_logits = tf.einsum('nh,nkh->nk', anchors, negatives)  # [N, K]
  logits = tf.concat([positive_logits, negative_logits], -1) / temperature  # [N, K + 1]
  per_anchor = -tf.nn.log_softmax(logits)[:, 0]
  return classification.weighted_mean(per_anchor, weights)
