"""Builds pretraining TFRecords from text files or a TFDS dataset.

  teams-create-pretraining-data --input='/data/wiki/*.txt' --vocab_file=/data/vocab.txt \
      --output_dir=/data/records --output_kind=masked --seq_length=128 --dupe_factor=40

`[CLS] A [SEP] B [SEP]` sequences from one document at a time, written as sharded tf.train.Examples
(`teams_tf/preprocessing/`): unmasked for masking at training time, or `--dupe_factor` masked
copies in Model Garden's BERT format. Formats, guarantees, speed: docs/training.md. Bad flags or an
unusable vocabulary exit with a one-line `error: ...`.
"""

import dataclasses
import os
import sys
import time

from absl import flags
import tensorflow as tf

from teams_tf.data import corpus
from teams_tf.preprocessing import pretraining_records
from teams_tf.preprocessing import record_format
from teams_tf.utils import entry_points

_INPUT = flags.DEFINE_string('input', None, 'Text files or globs, comma-separated (sample:train).')
_DOCUMENT_MODE = flags.DEFINE_enum(
    'document_mode', 'blank_line', corpus.DOCUMENT_MODES,
    'blank_line: documents are blocks separated by blank lines; file: one document per file.')
_TFDS_NAME = flags.DEFINE_string('tfds_name', None, 'TFDS text dataset, instead of --input.')
_TFDS_SPLIT = flags.DEFINE_string('tfds_split', 'train', 'TFDS split.')
_TFDS_TEXT_KEY = flags.DEFINE_string('tfds_text_key', 'text', 'TFDS feature holding the text.')
_TFDS_DATA_DIR = flags.DEFINE_string('tfds_data_dir', None, 'TFDS data directory.')
flags.DEFINE_string('vocab_file', None, 'WordPiece vocabulary with [PAD] [UNK] [CLS] [SEP] '
                    '[MASK] (sample:vocab for the embedded one); the one training will use.')
flags.DEFINE_bool('lower_case', True, 'Lowercase and strip accents; must match the vocabulary.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', None, 'Directory for the shards and the summary.')
_OUTPUT_PREFIX = flags.DEFINE_string('output_prefix', 'pretrain', 'Shards: <prefix>-0000k-of-N.')
_NUM_SHARDS = flags.DEFINE_integer('num_shards', 8, 'Number of output shards.')
_OUTPUT_KIND = flags.DEFINE_enum(
    'output_kind', 'masked', record_format.OUTPUT_KINDS,
    'unmasked: input_ids/input_mask/segment_ids, masked at training time; masked: plus '
    'masked_lm_positions/ids/weights, --dupe_factor copies per sequence.')
flags.DEFINE_integer('seq_length', 128, 'T, tokens per sequence including specials.')
flags.DEFINE_integer('num_segments', 2, '2: [CLS] A [SEP] B [SEP] split at a random sentence '
                     'boundary; 1: [CLS] A [SEP].')
flags.DEFINE_integer('dupe_factor', 40, 'Differently masked copies per sequence (TEAMS: 40).')
flags.DEFINE_integer('max_predictions_per_seq', 20, 'P, prediction slots per sequence (T=128: 20).')
flags.DEFINE_float('mask_rate', 0.15, 'Fraction of tokens to predict (BERT: 0.15).')
flags.DEFINE_float('mask_token_rate', 0.8, 'P(a predicted token becomes [MASK]) (BERT: 0.8).')
flags.DEFINE_float('random_token_rate', 0.1, 'P(it becomes a random token) (BERT: 0.1).')
flags.DEFINE_bool('whole_word_masking', False, 'Mask all WordPiece pieces of a word together.')
flags.DEFINE_integer('seed', record_format.DEFAULT_SEED, 'Seeds pair splits, shuffling, masking.')
_NUM_WORKERS = flags.DEFINE_integer(
    'num_workers', os.cpu_count() or 1, 'Worker processes (spawned); 1 runs in this process.')
_OVERWRITE = flags.DEFINE_bool('overwrite', False, 'Replace shards and summary of this prefix.')


def main(argv):
  try:
    if len(argv) > 1:
      raise ValueError(f'unexpected arguments {argv[1:]}; every option is a --flag.')
    record_format.check_masking_options(
        _OUTPUT_KIND.value, [name for name in flags.FLAGS if flags.FLAGS[name].present])
    source = corpus.CorpusSource(
        input_patterns=_INPUT.value or '', document_mode=_DOCUMENT_MODE.value,
        tfds_name=_TFDS_NAME.value or '', tfds_split=_TFDS_SPLIT.value,
        tfds_text_key=_TFDS_TEXT_KEY.value, tfds_data_dir=_TFDS_DATA_DIR.value or '')
    options = record_format.RecordOptions(**{  # Each option is the flag of its name.
        field.name: flags.FLAGS[field.name].value
        for field in dataclasses.fields(record_format.RecordOptions)})
    start = time.monotonic()
    summary = pretraining_records.create_pretraining_data(
        source, options, _OUTPUT_DIR.value, output_prefix=_OUTPUT_PREFIX.value,
        num_shards=_NUM_SHARDS.value, num_workers=_NUM_WORKERS.value, overwrite=_OVERWRITE.value)
  except (ValueError, tf.errors.OpError) as e:  # OpError: an unreadable input or output path.
    sys.exit(f'error: {" ".join(str(e).split())}')  # One line instead of a stack trace.
  print(pretraining_records.summary_text(summary, _OUTPUT_DIR.value, time.monotonic() - start))


def run():
  """The `teams-create-pretraining-data` command; in a clone, `tools/create_pretraining_data.py`."""
  entry_points.run(main, sys.modules[__name__], required=['vocab_file', 'output_dir'])


if __name__ == '__main__':
  run()
