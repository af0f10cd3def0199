"""Learns a WordPiece vocabulary from text files or a TFDS dataset.

  teams-build-vocab --input='/data/wiki/*.txt' --output=/data/vocab.txt --vocab_size=30522

Every non-blank line is text (cleaned as in `teams_tf/data/corpus.py`: invalid UTF-8 becomes U+FFFD,
control characters become spaces, binary files are skipped). Words are split and counted with
tensorflow-text's BERT `BasicTokenizer`, with progress, then tensorflow-text's WordPiece learner
picks the pieces (`teams_tf/preprocessing/vocab_builder.py`). The vocabulary starts with [PAD] [UNK]
[CLS] [SEP] [MASK] at ids 0-4; it is written to a temporary name and renamed when complete. The
final summary gives lines, words, distinct words, vocabulary size, the [UNK] rate of the input under
the new vocabulary, and the output path. `teams_tf/data/sample/SOURCE.md` gives the command that
rebuilds `sample:vocab`.
"""

import sys

from absl import flags
import tensorflow as tf

from teams_tf.data import corpus
from teams_tf.preprocessing import vocab_builder
from teams_tf.utils import entry_points

_INPUT = flags.DEFINE_string(
    'input', None, 'Comma-separated text files or globs (sample:train names the embedded corpus).')
_TFDS_NAME = flags.DEFINE_string('tfds_name', None, 'TFDS text dataset, instead of --input.')
_TFDS_SPLIT = flags.DEFINE_string('tfds_split', 'train', 'TFDS split.')
_TFDS_TEXT_KEY = flags.DEFINE_string('tfds_text_key', 'text', 'TFDS feature holding the text.')
_TFDS_DATA_DIR = flags.DEFINE_string('tfds_data_dir', None, 'TFDS data directory.')
_OUTPUT = flags.DEFINE_string('output', None, 'Vocabulary file to write, one token per line.')
_VOCAB_SIZE = flags.DEFINE_integer(
    'vocab_size', 30522, 'Target size including the 5 reserved tokens (BERT: 30522); the learner '
    'returns at most this many, possibly fewer on a small corpus.')
_MIN_COUNT = flags.DEFINE_integer(
    'min_count', vocab_builder.DEFAULT_MIN_COUNT,
    "Lowest word-piece count the learner's threshold search may try (its lower_thresh; "
    'tensorflow-text default 10). Lower it when a small corpus gives too few tokens.')
_LOWER_CASE = flags.DEFINE_bool(
    'lower_case', True, 'Uncased vocabulary: lowercase and strip accents (as BERT uncased).')
_MAX_LINES = flags.DEFINE_integer('max_lines', None, 'Stop after this many non-blank lines.')


def main(argv):
  try:
    if len(argv) > 1:
      raise ValueError(f'unexpected arguments {argv[1:]}; every option is a --flag.')
    # Every non-blank line is text, so the document grouping does not matter; 'file' keeps no state.
    source = corpus.CorpusSource(
        input_patterns=_INPUT.value or '', document_mode='file', tfds_name=_TFDS_NAME.value or '',
        tfds_split=_TFDS_SPLIT.value, tfds_text_key=_TFDS_TEXT_KEY.value,
        tfds_data_dir=_TFDS_DATA_DIR.value or '')
    print(vocab_builder.build_vocabulary(source, _OUTPUT.value, _VOCAB_SIZE.value,
                                         _MIN_COUNT.value, _LOWER_CASE.value, _MAX_LINES.value))
  except (ValueError, tf.errors.OpError) as e:  # OpError: an unreadable input path.
    sys.exit(f'error: {" ".join(str(e).split())}')  # One line instead of a stack trace.


def run():
  """The `teams-build-vocab` command; `python tools/build_vocab.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['output'])


if __name__ == '__main__':
  run()
