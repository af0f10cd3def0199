"""Cropped views for COCO-LM's sequence contrastive learning (§3.3, X^crop).

X^crop is a random contiguous span of the original sequence holding a fixed fraction of its
tokens (paper: 90%), so the major meaning is kept. The first token ([CLS]) is kept in front of
the span because SCL reads the sequence representation h_[CLS]; the span is drawn from the
remaining tokens (including [SEP]s). Works on padded batches inside a graph, from a stateless
seed.
"""

import tensorflow as tf

from teams_tf.ops import replica_random


def crop_sequences(word_ids, input_mask, type_ids, fraction, seed):
  """Random contiguous crops, one per row, left-aligned after the kept first token.

  Row b with n real tokens (n = sum of its mask) has body positions 1..n-1; the crop keeps
  m = max(1, round(fraction·(n - 1))) consecutive body tokens starting at s, drawn uniformly from
  [1, n - m]: [x_0, x_s, ..., x_{s+m-1}, 0, ..., 0]. A row with no body keeps only x_0.

  Args:
    word_ids: [B, T] int token ids, [CLS] first, then real tokens, then padding.
    input_mask: [B, T] int, 1 for real tokens (a prefix of each row).
    type_ids: [B, T] int segment ids, cropped alike.
    fraction: float in (0, 1], share of the body tokens kept.
    seed: [2] int stateless seed.

  Returns:
    Dict of [B, T] int32 `input_word_ids`, `input_mask`, `input_type_ids` (padding 0) and
    [B] int32 `crop_start` (s) and `crop_length` (m).
  """
  if not 0.0 < fraction <= 1.0:
    raise ValueError(f'crop fraction={fraction} must be in (0, 1] (COCO-LM: 0.9).')
  word_ids = tf.cast(word_ids, tf.int32)
  input_mask = tf.cast(input_mask, tf.int32)
  type_ids = tf.cast(type_ids, tf.int32)
  seq_length = tf.shape(word_ids)[1]
  body = tf.maximum(tf.reduce_sum(input_mask, axis=1) - 1, 0)  # [B]
  body_float = tf.cast(body, tf.float32)
  length = tf.minimum(
      tf.maximum(tf.cast(tf.round(fraction * body_float), tf.int32), 1), body)  # [B]
  choices = tf.cast(body - length + 1, tf.float32)
  uniform = replica_random.uniform(tf.shape(body), seed)
  start = 1 + tf.minimum(tf.cast(tf.floor(uniform * choices), tf.int32), body - length)
  positions = tf.range(seq_length)[None, :]  # [1, T]
  kept = (positions >= 1) & (positions <= length[:, None])  # [B, T] span slots
  source = tf.where(kept, start[:, None] + positions - 1, 0)
  is_first = tf.equal(positions, 0)
  valid = kept | (is_first & (tf.reduce_sum(input_mask, axis=1, keepdims=True) > 0))
  zeros = tf.zeros_like(word_ids)
  return dict(
      input_word_ids=tf.where(valid, tf.gather(word_ids, source, batch_dims=1), zeros),
      input_mask=tf.cast(valid, tf.int32),
      input_type_ids=tf.where(valid, tf.gather(type_ids, source, batch_dims=1), zeros),
      crop_start=start,
      crop_length=length)
