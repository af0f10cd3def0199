"""TACO's token pairs (§3): a positive from the token's own context, negatives from other contexts.

For every non-padding token j of sequence b:
  - the positive is drawn uniformly from the other non-padding tokens of b within W positions
    (1 ≤ |j' - j| ≤ W; TACO's window W = 5), never j itself;
  - each of the K negatives (TACO: 50) is a uniformly drawn non-padding token of a uniformly drawn
    other sequence b' ≠ b of the batch (draws are independent, so with replacement).
Indices only: no gradient. Noise from `replica_random.uniform`, so a seed fixes the pairs of
every sequence whatever the number of replicas.
"""

import tensorflow as tf

from teams_tf.ops import replica_random


def window_positives(input_mask, window, seed):
  """One positive position per token, within `window` positions in the same sequence.

  Args:
    input_mask: [B, T] int, 1 for real tokens (a prefix of each row).
    window: W ≥ 1.
    seed: [2] int stateless seed.

  Returns:
    (positions, valid): [B, T] int32 positive positions (0 where invalid) and [B, T] bool, False
    for padding and for tokens with no other token within the window (one-token sequences).
  """
  if window < 1:
    raise ValueError(f'window={window} must be >= 1 (TACO: 5).')
  input_mask = tf.cast(input_mask, tf.int32)
  length = tf.reduce_sum(input_mask, axis=1, keepdims=True)  # [B, 1]
  position = tf.range(tf.shape(input_mask)[1])[None, :]  # [1, T]
  low = tf.maximum(position - window, 0)
  high = tf.minimum(position + window, length - 1)
  count = high - low  # Candidates in [low, high] without the token itself.
  valid = (input_mask > 0) & (count > 0)
  uniform = replica_random.uniform(tf.shape(input_mask), seed)
  draw = low + tf.minimum(tf.cast(uniform * tf.cast(count, tf.float32), tf.int32),
                          tf.maximum(count - 1, 0))
  draw += tf.cast(draw >= position, tf.int32)  # Skip the token itself.
  return tf.where(valid, draw, 0), valid


def cross_sequence_negatives(input_mask, num_negatives, seed, row_offset=0, num_rows=None):
  """K negatives per token, each a random token of another sequence of the batch.

  Args:
    input_mask: [G, T] int mask of every candidate sequence (under a distribution strategy the
      global batch, gathered from all replicas); every row holds at least one token.
    num_negatives: K ≥ 1.
    seed: [2] int stateless seed.
    row_offset: row of `input_mask` holding this replica's first sequence.
    num_rows: B, this replica's sequences (default G): rows row_offset .. row_offset + B - 1.

  Returns:
    (rows, positions): [B, T, K] int32 indices into `input_mask`'s rows and positions; the row
    is never the anchor's own, the position never padding.

  Raises:
    tf.errors.InvalidArgumentError (at run time): fewer than two sequences.
  """
  if num_negatives < 1:
    raise ValueError(f'num_negatives={num_negatives} must be >= 1 (TACO: 50).')
  input_mask = tf.cast(input_mask, tf.int32)
  total = tf.shape(input_mask)[0]
  num_rows = total if num_rows is None else num_rows
  seq_length = tf.shape(input_mask)[1]
  tf.debugging.assert_greater_equal(
      total, 2, message='TACO negatives need at least two sequences in the (global) batch.')
  row_seed, position_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
  shape = tf.stack([num_rows, seq_length, num_negatives])
  anchor_row = row_offset + tf.range(num_rows)[:, None, None]  # [B, 1, 1]
  # Uniform over the other G - 1 rows: step 1 .. G - 1 rows ahead, wrapping around.
  step = 1 + tf.minimum(tf.cast(replica_random.uniform(shape, row_seed) *
                                tf.cast(total - 1, tf.float32), tf.int32), total - 2)
  rows = (anchor_row + step) % total
  lengths = tf.gather(tf.reduce_sum(input_mask, axis=1), rows)  # [B, T, K]
  positions = tf.minimum(
      tf.cast(replica_random.uniform(shape, position_seed) * tf.cast(lengths, tf.float32),
              tf.int32), tf.maximum(lengths - 1, 0))
  return rows, positions
