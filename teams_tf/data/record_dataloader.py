"""Pretraining TFRecords written by `tools/create_pretraining_data.py`.

Two kinds, both tf.train.Examples with int64 features of static length:
  unmasked (`input_format='tfrecord'`): `input_ids`, `input_mask`, `segment_ids` [T]; masked here,
    dynamically, like the raw-text path.
  masked (`input_format='masked_tfrecord'`): additionally `masked_lm_positions`, `masked_lm_ids` [P]
    and float `masked_lm_weights` [P]: Model Garden's BERT pretraining format, read with Model
    Garden's own `BertPretrainDataLoader`.
"""

from typing import Optional

import tensorflow as tf

from official.nlp.data import pretrain_dataloader

from teams_tf.data import input_files


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
