"""Sampling tokens and writing them back into sequences (TEAMS x^R, COCO-LM X^MLM, SCRIPT x̄).

Gumbel noise (for TEAMS' candidate sets and SCRIPT's Gumbel-softmax, Eq. 3), and the corrupted
sequence every replaced-token objective here builds the same way: the masked input x^M with the
sampled token at each masked position, and, beside it, the original sequence x recovered from the
masked positions' labels.
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from teams_tf.ops import replica_random


def gumbel_noise(shape, seed):
  """Standard Gumbel(0, 1) noise, float32 [B, ...], rows independent of the replica split.

  Inverse transform: g = -log(-log u), u ~ Uniform(0, 1) (SCRIPT footnote 1), u from
  `replica_random.uniform`.
  """
  # u > 0 keeps log(u) finite; u < 1, so -log(u) > 0.
  u = tf.maximum(replica_random.uniform(shape, seed), np.finfo(np.float32).tiny)
  return -tf.math.log(-tf.math.log(u))


class BlockedLogits(NamedTuple):
  """Logits cut into blocks of the vocabulary, with each block's log-sum-exp.

  blocks: [..., N, C] float32, the vocabulary in N = ceil(V / C) blocks of C, the last padded
    with -inf (probability 0).
  log_sum_exp: [..., N] float32, log Σ exp over each block.
  """
  blocks: tf.Tensor
  log_sum_exp: tf.Tensor


def block_logits(logits, block_size):
  """Cuts [..., V] logits (static rank and V) into `BlockedLogits` of `block_size` tokens."""
  logits = tf.cast(logits, tf.float32)
  vocab_size = logits.shape[-1]
  num_blocks = -(-vocab_size // block_size)
  padding = [[0, 0]] * (logits.shape.rank - 1) + [[0, num_blocks * block_size - vocab_size]]
  blocks = tf.reshape(tf.pad(logits, padding, constant_values=-np.inf),
                      tf.concat([tf.shape(logits)[:-1], [num_blocks, block_size]], 0))
  return BlockedLogits(blocks, tf.reduce_logsumexp(blocks, axis=-1))


def _token_ids(block_ids, offsets, block_size):
  return block_ids * block_size + offsets


def gumbel_max_sample(blocked, seed):
  """One id per row from softmax(logits), in two Gumbel-max draws of O(N + C) noise, not O(V).

  The maximum of logit + Gumbel noise over a block is distributed as Gumbel(log-sum-exp of the
  block), and which token attains it is independent of the value and follows the softmax within
  the block (Maddison, Tarlow & Minka 2014, §3). So a Gumbel-max over the N block log-sum-exps
  picks the block with its probability mass, and a second, independent one over that block's C
  logits picks the token: P(token) = P(block) · P(token | block) = softmax(logits)[token].

  Args:
    blocked: `BlockedLogits` of [..., V] logits.
    seed: [2] int stateless seed.

  Returns:
    [...] int32 token ids.
  """
  block_seed, token_seed = tf.unstack(tf.random.experimental.stateless_split(seed, num=2))
  lse = blocked.log_sum_exp
  block_ids = tf.argmax(lse + gumbel_noise(tf.shape(lse), block_seed), axis=-1,
                        output_type=tf.int32)
  block = tf.gather(blocked.blocks, block_ids, batch_dims=block_ids.shape.rank)  # [..., C]
  offsets = tf.argmax(block + gumbel_noise(tf.shape(block), token_seed), axis=-1,
                      output_type=tf.int32)
  return _token_ids(block_ids, offsets, block.shape[-1])


def _log1mexp(x):
  """log(1 - exp(x)) for x <= 0, accurate on both sides of -log 2 (Mächler 2012)."""
  return tf.where(x > -np.log(2.0), tf.math.log(-tf.math.expm1(x)),
                  tf.math.log1p(-tf.exp(x)))


def gumbel_top_k(blocked, k, seed):
  """The k largest of logits + i.i.d. Gumbel noise, drawing noise for O(N + k·C) entries.

  The k largest perturbed logits over the vocabulary are K sequential draws without
  replacement from softmax(logits) (Kool, van Hoof & Welling 2019). Top-down (Maddison et al.
  2014; Kool et al. 2019, Appendix B): each block's maximum is drawn first, M_b ~ Gumbel(log-sum-
  exp_b); only the k blocks with the largest M_b can hold one of the k largest values (every
  other block lies entirely below the k-th largest maximum); inside those, the perturbed logits
  are drawn conditioned on their maximum being M_b: G_i = logit_i + Gumbel, Z = max_i G_i,
  G̃_i = -log(exp(-M_b) - exp(-Z) + exp(-G_i)). The k largest G̃ over the k·C entries are the k
  largest over all V, with the joint law of the full draw.

  Args:
    blocked: `BlockedLogits` of [..., V] logits, V >= k.
    k: Python int number of ids.
    seed: [2] int stateless seed.

  Returns:
    [..., k] int32 distinct token ids in decreasing order of their perturbed logits.
  """
  maxima_seed, inner_seed = tf.unstack(tf.random.experimental.stateless_split(seed, num=2))
  lse = blocked.log_sum_exp
  maxima = lse + gumbel_noise(tf.shape(lse), maxima_seed)
  top_maxima, block_ids = tf.math.top_k(maxima, k=min(k, lse.shape[-1]))  # [..., k']
  blocks = tf.gather(blocked.blocks, block_ids, batch_dims=block_ids.shape.rank - 1)
  perturbed = blocks + gumbel_noise(tf.shape(blocks), inner_seed)  # [..., k', C]
  block_max = tf.reduce_max(perturbed, axis=-1, keepdims=True)
  # G̃ = M - softplus(v) with v = M - G + log(1 - exp(G - Z)): stable, -inf for padding, and
  # exactly M where G = Z.
  v = top_maxima[..., None] - perturbed + _log1mexp(perturbed - block_max)
  conditioned = top_maxima[..., None] - tf.nn.relu(v) - tf.math.log1p(tf.exp(-tf.abs(v)))
  block_size = blocks.shape[-1]
  flat_shape = tf.concat([tf.shape(blocks)[:-2], [-1]], 0)
  top = tf.math.top_k(tf.reshape(conditioned, flat_shape), k=k).indices  # [..., k]
  block_of_top = tf.gather(block_ids, top // block_size, batch_dims=top.shape.rank - 1)
  return _token_ids(block_of_top, top % block_size, block_size)


def _scatter_masked(values, positions, weights, shape):
  """Dense [B, T] tensor with `values` [B, P] at `positions` where weights > 0, else 0."""
  batch_index = tf.broadcast_to(tf.range(shape[0])[:, None], tf.shape(positions))
  indices = tf.stack([batch_index, positions], axis=-1)  # [B, P, 2]
  # Padded slots (weight 0) all point at position 0; multiplying by the weight makes their
  # contribution 0, and real masked positions are distinct, so the sum is the value itself.
  keep = tf.cast(weights > 0, values.dtype)
  return tf.scatter_nd(indices, values * keep, shape)


def masked_indicator(word_ids, positions, weights):
  """[B, T] bool, True at the masked positions (slots with weight > 0) of a [B, T] batch."""
  return _scatter_masked(tf.ones_like(weights), positions, weights, tf.shape(word_ids)) > 0


def replace_masked_tokens(word_ids, positions, weights, original_ids, sampled_ids):
  """The original and the corrupted sequence of a masked batch.

  Args:
    word_ids: [B, T] int32 masked input x^M.
    positions: [B, P] int32 masked positions (padded slots: any position, weight 0).
    weights: [B, P] float, 0 for padded prediction slots.
    original_ids: [B, P] int original tokens at the masked positions.
    sampled_ids: [B, P] int32 tokens to put at the masked positions.

  Returns:
    (original, corrupted): [B, T] int32 x (x^M with `original_ids` written back) and the
    corrupted sequence (x^M with `sampled_ids` at the masked positions). No gradient.
  """
  shape = tf.shape(word_ids)
  is_masked = masked_indicator(word_ids, positions, weights)
  original = tf.where(
      is_masked, _scatter_masked(tf.cast(original_ids, tf.int32), positions, weights, shape),
      word_ids)
  corrupted = tf.where(
      is_masked, _scatter_masked(tf.cast(sampled_ids, tf.int32), positions, weights, shape),
      word_ids)
  return original, corrupted


def uniform_token_ids(shape, vocab_size, seed):
  """Token ids drawn uniformly from [0, vocab_size): COCO-LM's random-replacement ablation.

  Args:
    shape: int32 shape of the result, e.g. [B, P].
    vocab_size: V.
    seed: [2] int stateless seed.

  Returns:
    int32 tensor of `shape`.
  """
  draw = tf.cast(replica_random.uniform(shape, seed) * tf.cast(vocab_size, tf.float32), tf.int32)
  return tf.minimum(draw, vocab_size - 1)


def gumbel_softmax_sample(logits, temperature, seed, straight_through=False):
  """One token per row from the Gumbel-softmax distribution, SCRIPT Eq. (3).

  The hard sample is argmax_v (log π_v + g_v) / τ, distributed exactly as π = softmax(logits)
  whatever τ (Gumbel-max). With `straight_through`, the returned one-hot is the hard sample in
  the forward pass and carries the gradient of softmax((log π + g) / τ) in the backward pass.

  Args:
    logits: [..., V] float scores (log π up to a constant); cast to float32.
    temperature: τ > 0 of Eq. (3).
    seed: [2] int stateless seed.
    straight_through: also return the straight-through one-hot.

  Returns:
    (ids, one_hot): [...] int32 sampled ids and, with `straight_through`, [..., V] float32 one-hot
    differentiable w.r.t. `logits`; else None. `ids` is never differentiable.
  """
  logits = tf.cast(logits, tf.float32)
  perturbed = (tf.nn.log_softmax(logits) + gumbel_noise(tf.shape(logits), seed)) / temperature
  ids = tf.argmax(perturbed, axis=-1, output_type=tf.int32)
  if not straight_through:
    return ids, None
  soft = tf.nn.softmax(perturbed)
  hard = tf.one_hot(ids, tf.shape(logits)[-1], dtype=soft.dtype)
  return ids, hard + soft - tf.stop_gradient(soft)
