"""GLUE train/dev TFRecords for Model Garden's sentence-prediction task (`glue_<task>_<size>`).

  teams-create-glue-data --task=sst2 --glue_dir=../shared/data/glue/SST-2 \
      --vocab_file=sample:vocab --lower_case --max_seq_length=128 --output_dir=/tmp/glue/sst2 \
      [--max_train_examples=4000]
  teams-create-glue-data --task=sst2 --tfds_name=glue/sst2 --vocab_file=... \
      --output_dir=...

Reads the GLUE TSVs (`teams_tf.finetuning.glue`) or a prepared TFDS dataset and writes
<output_dir>/train.tfrecord, dev.tfrecord and, last, meta_data.json (so its presence marks a
complete conversion) with Model Garden's `classifier_data_lib`; see docs/finetuning.md.
`--max_train_examples` keeps a seeded random subset of the train set; dev is always complete.
`--heldout_examples` moves a seeded slice of those train examples to heldout.tfrecord, for
choosing fine-tuning epochs and learning rates without reading dev.
"""

import os
import sys
import time

from absl import flags

from teams_tf.finetuning import glue
from teams_tf.finetuning import glue_processors
from teams_tf.utils import entry_points

_TASK = flags.DEFINE_enum('task', None, glue_processors.TASKS, 'GLUE task.')
_GLUE_DIR = flags.DEFINE_string(
    'glue_dir', None, 'Folder with the task\'s original GLUE train.tsv and dev.tsv '
    '(MNLI: dev_matched.tsv).')
_TFDS_NAME = flags.DEFINE_string(
    'tfds_name', None, 'Instead of --glue_dir: the already-prepared TFDS dataset (glue/<task>), '
    'read through Model Garden\'s TFDS processor for --task.')
_VOCAB_FILE = flags.DEFINE_string(
    'vocab_file', 'sample:vocab', 'WordPiece vocabulary of the pretrained encoder (sample:vocab = '
    'the embedded one teams_demo uses).')
_LOWER_CASE = flags.DEFINE_bool('lower_case', True, 'Lowercase and strip accents (uncased vocab).')
_MAX_SEQ_LENGTH = flags.DEFINE_integer(
    'max_seq_length', 128, 'Sequence length T, [CLS] and [SEP]s included; longer pairs are '
    'truncated, the longer text first.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', None, 'Where the records and meta_data.json go.')
_MAX_TRAIN_EXAMPLES = flags.DEFINE_integer(
    'max_train_examples', None, 'Keep a random subset of this many train examples.')
_SUBSET_SEED = flags.DEFINE_integer('subset_seed', 0, 'Seed of the --max_train_examples subset '
                                    'and of the --heldout_examples slice.')
_HELDOUT_EXAMPLES = flags.DEFINE_integer(
    'heldout_examples', 0, 'Train examples written to heldout.tfrecord instead of train.tfrecord.')


def _processor():
  """(processor, its data_dir, the source recorded in meta_data.json) from the flags."""
  if (_GLUE_DIR.value is None) == (_TFDS_NAME.value is None):
    raise ValueError('give exactly one of --glue_dir and --tfds_name.')
  if _GLUE_DIR.value is not None:
    return (glue_processors.tsv_processor(_TASK.value), _GLUE_DIR.value,
            os.path.abspath(_GLUE_DIR.value))
  return (glue_processors.tfds_processor(_TASK.value, _TFDS_NAME.value), None,
          f'tfds:{_TFDS_NAME.value}')


def main(argv):
  del argv
  start = time.time()
  try:
    vocab = glue.check_vocabulary(_VOCAB_FILE.value)
    processor, data_dir, source = _processor()
    meta_data, stats = glue.write_records(
        processor, data_dir, vocab, _LOWER_CASE.value, _MAX_SEQ_LENGTH.value, _OUTPUT_DIR.value,
        _TASK.value, source, _MAX_TRAIN_EXAMPLES.value, _SUBSET_SEED.value,
        _HELDOUT_EXAMPLES.value)
  except ValueError as e:  # Bad flags, vocabulary or rows: one line naming the file and line.
    sys.exit(f'error: {" ".join(str(e).split())}')
  print(f'GLUE {meta_data["task"]} from {source} -> {os.path.abspath(_OUTPUT_DIR.value)} '
        f'({time.time() - start:.1f} s)')
  print(glue.conversion_summary(meta_data, stats, processor.get_labels()))


def run():
  """The `teams-create-glue-data` command; `python tools/create_glue_data.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['task', 'output_dir'])


if __name__ == '__main__':
  run()
