"""The pretraining records' contract: options, features, shard names and serialization.

`pretraining_records` writes these records; Model Garden's BERT pretraining loader and
`teams_tf.data.pretrain_dataloader` read them.

Record features (tf.train.Example; T = seq_length, P = max_predictions_per_seq):
  unmasked: `input_ids`, `input_mask`, `segment_ids`: int64 [T].
  masked: the same three, with `input_ids` corrupted, plus `masked_lm_positions`, `masked_lm_ids`:
    int64 [P], and `masked_lm_weights`: float [P] -- Model Garden's BERT pretraining format, read by
    `official.nlp.data.pretrain_dataloader.BertPretrainDataLoader(use_next_sentence_label=False)`.
"""

import dataclasses
from typing import Iterable

import numpy as np
import tensorflow as tf

from teams_tf.data import masking
from teams_tf.data import tokenization

OUTPUT_KINDS = ('unmasked', 'masked')
# The `RecordOptions` only masked output reads: unmasked records are masked at training time.
MASKING_OPTIONS = ('dupe_factor', 'max_predictions_per_seq', 'mask_rate', 'mask_token_rate',
                   'random_token_rate', 'whole_word_masking')
# Seeds every random choice of the records unless told otherwise (tool and library alike).
DEFAULT_SEED = 12345


@dataclasses.dataclass(frozen=True)
class RecordOptions:
  """Everything that determines the records' content (see the tool's flags for meanings)."""
  vocab_file: str
  lower_case: bool = True
  seq_length: int = 128
  num_segments: int = 2
  output_kind: str = 'masked'
  dupe_factor: int = 40
  max_predictions_per_seq: int = 20
  mask_rate: float = 0.15
  mask_token_rate: float = 0.8
  random_token_rate: float = 0.1
  whole_word_masking: bool = False
  seed: int = DEFAULT_SEED

  def validate(self, vocab: tokenization.Vocabulary) -> None:
    """Raises ValueError naming the option, its value and the valid range."""
    if self.output_kind not in OUTPUT_KINDS:
      raise ValueError(f'output_kind={self.output_kind!r} is not one of {OUTPUT_KINDS}.')
    if self.seed < 0:
      raise ValueError(f'seed={self.seed} must be >= 0.')
    if self.output_kind == 'masked':
      if self.dupe_factor < 1:
        raise ValueError(f'dupe_factor={self.dupe_factor} must be >= 1.')
      masking.validate_masking_args(
          max_predictions_per_seq=self.max_predictions_per_seq, mask_rate=self.mask_rate,
          mask_token_rate=self.mask_token_rate, random_token_rate=self.random_token_rate,
          special_ids=vocab.special_ids, mask_id=vocab.mask_id, vocab_size=vocab.size,
          seq_length=self.seq_length)


def check_masking_options(output_kind: str, given: Iterable[str]) -> None:
  """Refuses masking options set for unmasked output, where they would do nothing.

  `given` names the options set explicitly (the tool's flags); the ValueError names them.
  """
  named = [f'--{name}' for name in MASKING_OPTIONS if name in given]
  if output_kind == 'unmasked' and named:
    raise ValueError(f'{", ".join(named)} only apply to --output_kind=masked; unmasked records '
                     'are masked at training time.')


def feature_spec(options: RecordOptions) -> dict[str, tf.io.FixedLenFeature]:
  """The records' features, to parse them with `tf.io.parse_single_example`."""
  spec = {name: tf.io.FixedLenFeature([options.seq_length], tf.int64)
          for name in ('input_ids', 'input_mask', 'segment_ids')}
  if options.output_kind == 'masked':
    num_slots = options.max_predictions_per_seq
    spec['masked_lm_positions'] = tf.io.FixedLenFeature([num_slots], tf.int64)
    spec['masked_lm_ids'] = tf.io.FixedLenFeature([num_slots], tf.int64)
    spec['masked_lm_weights'] = tf.io.FixedLenFeature([num_slots], tf.float32)
  return spec


def shard_names(prefix: str, num_shards: int) -> list[str]:
  """`<prefix>-00000-of-00008.tfrecord`, ... for every shard."""
  return [f'{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord' for i in range(num_shards)]


def _int64_feature(values) -> tf.train.Feature:
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))


def serialize(features: dict[str, np.ndarray]) -> bytes:
  """One record: float arrays as float features, the others as int64."""
  feature = {name: (tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
                    if values.dtype.kind == 'f' else _int64_feature(values))
             for name, values in features.items()}
  # Deterministic map order, so equal records are equal bytes.
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
      deterministic=True)
