"""Pretraining TFRecords written by `tools/create_pretraining_data.py`.

Two kinds, both tf.train.Examples with int64 features of static length:
  unmasked (`input_format='tfrecord'`): `input_ids`, `input_mask`, `segment_ids` [T]; masked here,
    dynamically, like the raw-text path.
  masked (`input_format='masked_tfrecord'`): additionally `masked_lm_positions`, `masked_lm_ids` [P]
    and float `masked_lm_weights` [P]: Model Garden's BERT pretraining format, read with Model
    Garden's own `BertPretrainDataLoader`.
"""

import json
import os
import re
from typing import Optional

import tensorflow as tf

from official.nlp.data import pretrain_dataloader

from teams_tf.data import input_files
from teams_tf.data import tokenization
from teams_tf.utils import file_hashes

# `tools/create_pretraining_data.py` names shards `<prefix>-00000-of-00008.tfrecord` and writes
# `<prefix>-summary.json` beside them, last.
_SHARD_NAME = re.compile(r'^(?P<prefix>.+)-\d{5}-of-\d{5}\.tfrecord$')
# The input format that reads each `output_kind` of the records tool.
_INPUT_FORMAT_OF_KIND = {'unmasked': 'tfrecord', 'masked': 'masked_tfrecord'}


def _summaries(files: list[str]) -> dict[str, dict]:
  """The records tool's summaries of `files`, by path; files without one are left out."""
  summaries = {}
  for path in sorted({os.path.join(os.path.dirname(f), match.group('prefix') + '-summary.json')
                      for f in files
                      if (match := _SHARD_NAME.match(os.path.basename(f)))}):
    if tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path) as f:
        summaries[path] = json.load(f)
  return summaries


def check_records_fit(files: list[str], params, vocab: tokenization.Vocabulary, where: str):
  """Checks records against the data config that reads them, from the records' summary JSON.

  A mismatch would otherwise surface deep inside tf.data as a parse error ("Some int64_list slice
  was not parsed") or, for another vocabulary, as silently wrong ids.

  Args:
    files: the record files to read.
    params: their `PretrainDataConfig` (`input_format`, `seq_length`, `max_predictions_per_seq`).
    vocab: the vocabulary the config reads them with.
    where: the config's dotted name for the message, e.g. 'task.train_data'.

  Raises:
    ValueError: one line naming the record value, the config value, and the fix.
  """
  vocab_sha256 = file_hashes.sha256(vocab.path)
  for path, summary in _summaries(files).items():
    options = summary.get('options', {})
    kind = summary.get('output_kind')
    if _INPUT_FORMAT_OF_KIND.get(kind, params.input_format) != params.input_format:
      raise ValueError(
          f'{path} describes {kind} records, which {where}.input_format={params.input_format!r} '
          f'cannot read: set {where}.input_format={_INPUT_FORMAT_OF_KIND[kind]}.')
    fields = ['seq_length'] + (['max_predictions_per_seq'] if kind == 'masked' else [])
    for field in fields:
      if field in options and options[field] != getattr(params, field):
        raise ValueError(
            f'The records of {path} hold {field}={options[field]}, but {where}.{field}='
            f'{getattr(params, field)}: set {where}.{field}={options[field]}'
            + (' (and task.model.encoder.max_position_embeddings >= it)'
               if field == 'seq_length' else '')
            + f', or rebuild the records with tools/create_pretraining_data.py '
            f'--{field}={getattr(params, field)}.')
    written = summary.get('vocab', {})
    if written.get('sha256', vocab_sha256) != vocab_sha256:
      raise ValueError(
          f'The records of {path} were written with the vocabulary {written.get("path")} '
          f'({written.get("size")} tokens), not {where}.vocab_file={vocab.path} ({vocab.size} '
          f'tokens): set {where}.vocab_file to the records\' vocabulary, or rebuild the records '
          'with this one.')


def unmasked_sequences(files: list[str],
                       seq_length: int,
                       input_context: Optional[tf.distribute.InputContext] = None,
                       sharding: bool = True,
                       shuffle_seed: Optional[int] = None,
                       cycle_length: Optional[int] = None,
                       block_length: int = 1) -> tf.data.Dataset:
  """Reads unmasked sequence records.

  Args:
    files: TFRecord files.
    seq_length: T, the length the records were written with.
    input_context: distribution input context (per-host sharding), or None.
    sharding: whether to split the input among pipelines.
    shuffle_seed: if set, the file order is shuffled with this seed, anew every epoch.
    cycle_length: files read concurrently (default: up to 8).
    block_length: consecutive records taken from each file in turn.

  Returns:
    Dataset of (`input_word_ids`, `input_mask`, `input_type_ids`), each [T] int32, in a fixed order
    for a fixed seed.
  """
  features = {name: tf.io.FixedLenFeature([seq_length], tf.int64)
              for name in ('input_ids', 'input_mask', 'segment_ids')}

  def read(file_names):
    if shuffle_seed is not None:
      file_names = file_names.shuffle(len(files), seed=shuffle_seed, reshuffle_each_iteration=True)
    return file_names.interleave(
        tf.data.TFRecordDataset, cycle_length=cycle_length or min(len(files), 8),
        block_length=block_length, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  def parse(record):
    example = tf.io.parse_single_example(record, features)
    return tuple(tf.cast(example[name], tf.int32)
                 for name in ('input_ids', 'input_mask', 'segment_ids'))

  records = input_files.read_sharded(files, read, input_context, sharding)
  return records.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def masked_examples(params, files: list[str],
                    input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
  """Batches of statically masked records through Model Garden's `BertPretrainDataLoader`.

  Args:
    params: a `PretrainDataConfig`; its reader fields (batch size, shuffling, sharding, seed, ...)
      are passed on.
    files: the TFRecord files.
    input_context: distribution input context, or None.

  Returns:
    The batched dataset with the same features, shapes and dtypes as the other input formats.
  """
  config = pretrain_dataloader.BertPretrainDataConfig(
      input_path=files,
      global_batch_size=params.global_batch_size,
      is_training=params.is_training,
      seq_length=params.seq_length,
      max_predictions_per_seq=params.max_predictions_per_seq,
      use_next_sentence_label=False,
      drop_remainder=params.drop_remainder,
      shuffle_buffer_size=params.shuffle_buffer_size,
      cache=params.cache,
      cycle_length=params.cycle_length,
      block_length=params.block_length,
      deterministic=True,
      sharding=params.sharding,
      seed=params.seed)
  return pretrain_dataloader.BertPretrainDataLoader(config).load(input_context)
