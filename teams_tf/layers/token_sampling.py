"""Sampling tokens and writing them back into sequences (TEAMS x^R, COCO-LM X^MLM, SCRIPT x̄).

Gumbel noise (for TEAMS' candidate sets and SCRIPT's Gumbel-softmax, Eq. 3), and the corrupted
sequence every replaced-token objective here builds the same way: the masked input x^M with the
sampled token at each masked position, and, beside it, the original sequence x recovered from the
masked positions' labels.
"""

import numpy as np
import tensorflow as tf

from teams_tf.layers import replica_random


def gumbel_noise(shape, seed):
  """Standard Gumbel(0, 1) noise, float32 [B, ...], rows independent of the replica split.

  Inverse transform: g = -log(-log u), u ~ Uniform(0, 1) (SCRIPT footnote 1), u from
  `replica_random.uniform`.
  """
  # u > 0 keeps log(u) finite; u < 1, so -log(u) > 0.
  u = tf.maximum(replica_random.uniform(shape, seed), np.finfo(np.float32).tiny)
  return -tf.math.log(-tf.math.log(u))


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
