"""Pooling an encoder's token outputs into one vector per example, for fine-tuning heads.

Model Garden's `BertClassifier` reads [CLS] through a fresh dense+tanh layer. None of the
pretraining objectives here trains [CLS] (MLM, RTD, MWS and the others score tokens), so at a
small pretraining budget that vector holds what the tokens hold no better than random init's does
(benchmarks/replication/probes_stsb_cls.md), while the mean of the tokens does. These layers pool
the tokens themselves.
"""

import tensorflow as tf
import tf_keras

POOLINGS = ('mean', 'segment_pair', 'siamese_cosine')
# Poolings of two encoder passes, one per segment (`call`'s `second_sequence`).
SIAMESE = ('siamese_cosine',)


def _masked_mean(sequence, weights):
  """Mean over T of `sequence` [B, T, H] weighted by 0/1 `weights` [B, T]; 0 where all are 0."""
  weights = tf.cast(weights, sequence.dtype)[:, :, None]
  total = tf.reduce_sum(sequence * weights, axis=1)
  return total / tf.maximum(tf.reduce_sum(weights, axis=1), 1)


class TokenPooling(tf_keras.layers.Layer):
  """One vector per example from the encoder's last layer.

  Poolings:
    mean: the mean of the output vectors of every real token ([CLS] and [SEP] included, padding
      excluded): [B, H].
    segment_pair: u and v, the means over segment A's and segment B's tokens (by type id), read
      as [u, v, |u - v|, u * v] (Sentence-BERT's features, Reimers & Gurevych 2019, Eq. 1, here
      over one cross-encoded pair): [B, 4H]. For a sentence pair task such as STS-B.
    siamese_cosine: cos(u, v) of the segments encoded apart (Sentence-BERT's regression
      objective, Section 3: the cosine of two sentence embeddings, trained with squared error):
      `sequence` is a pass that sees segment A only, `second_sequence` one that sees segment B
      only; [B, 1]. A head can then only say how alike the two segments are, not memorize
      either one, and a random-init encoder's means already carry their words (in one
      cross-encoded pass they mix), which is what keeps a 5,749-pair train set from being
      overfit (benchmarks/finetuning/protocol.md).
  """

  def __init__(self, pooling: str = 'mean', **kwargs):
    super().__init__(**kwargs)
    if pooling not in POOLINGS:
      raise ValueError(f'pooling={pooling!r}; use one of {", ".join(POOLINGS)}.')
    self._pooling = pooling

  def call(self, sequence, input_mask, input_type_ids, second_sequence=None):
    """Args: `sequence` [B, T, H], `input_mask` and `input_type_ids` [B, T] int; for a
    `SIAMESE` pooling `second_sequence` [B, T, H], the pass over segment B."""
    if self._pooling == 'mean':
      return _masked_mean(sequence, input_mask)
    real = tf.cast(input_mask, tf.bool)
    first = _masked_mean(sequence, real & tf.equal(input_type_ids, 0))
    if self._pooling in SIAMESE:
      second = _masked_mean(second_sequence, real & tf.equal(input_type_ids, 1))
      return tf.reduce_sum(tf.math.l2_normalize(first, axis=-1) *
                           tf.math.l2_normalize(second, axis=-1), axis=-1, keepdims=True)
    second = _masked_mean(sequence, real & tf.equal(input_type_ids, 1))
    return tf.concat([first, second, tf.abs(first - second), first * second], axis=-1)

  def get_config(self):
    return dict(super().get_config(), pooling=self._pooling)


def segment_masks(input_mask, input_type_ids):
  """[B, T] input masks of segment A's and segment B's real tokens: an encoder given one of them
  attends within that segment only (its outputs elsewhere are not read)."""
  real = tf.cast(input_mask, tf.bool)
  return [tf.cast(real & tf.equal(input_type_ids, segment), input_mask.dtype)
          for segment in (0, 1)]
