"""Writing sampled tokens back into sequences (ELECTRA/TEAMS x^R, COCO-LM X^MLM).

Every replaced-token objective here builds the corrupted sequence the same way: the masked input
x^M with the sampled token at each masked position, and, beside it, the original sequence x
recovered from the masked positions' labels.
"""

import tensorflow as tf


def _scatter_masked(values, positions, weights, shape):
  """Dense [B, T] tensor with `values` [B, P] at `positions` where weights > 0, else 0."""
  batch_index = tf.broadcast_to(tf.range(shape[0])[:, None], tf.shape(positions))
  indices = tf.stack([batch_index, positions], axis=-1)  # [B, P, 2]
  # Padded slots (weight 0) all point at position 0; multiplying by the weight makes their
  # contribution 0, and real masked positions are distinct, so the sum is the value itself.
  keep = tf.cast(weights > 0, values.dtype)
  return tf.scatter_nd(indices, values * keep, shape)


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
  is_masked = _scatter_masked(tf.ones_like(weights), positions, weights, shape) > 0
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
  return tf.random.stateless_uniform(shape, seed, minval=0, maxval=vocab_size, dtype=tf.int32)
