r"""TACO's contextual score of a pretraining checkpoint: intra- vs inter-context cosine similarity.

  teams-contextual-score --model_dir=/tmp/teams_demo \
      --input=teams_tf/data/sample/valid.txt

Each non-empty input line is one context (a sentence or paragraph), tokenized with the run's
vocabulary and truncated to `--seq_length`. The kept encoder (any objective of this project) gives
the last-layer representations; for every token one token of the same context and one of another
context in the same batch are drawn (`--seed`), and the mean cosines and their gap (TACO Figures 3
and 6) are printed and, with `--output`, written as JSON. Progress (contexts/s, ETA) on stderr.
"""

import functools
import sys

from absl import flags
import tensorflow as tf

from teams_tf.data import embedded
from teams_tf.serving import contextual_score
from teams_tf.serving import loaders
from teams_tf.utils import atomic_files
from teams_tf.utils import entry_points

_MODEL_DIR = flags.DEFINE_string('model_dir', None, 'Pretraining model_dir.')
_CHECKPOINT_PATH = flags.DEFINE_string(
    'checkpoint_path', None, 'Checkpoint to use; default: the latest in --model_dir.')
_INPUT = flags.DEFINE_string('input', None, 'Text file (or sample:valid), one context per line.')
_SEQ_LENGTH = flags.DEFINE_integer('seq_length', 128,
                                  'Longest context, in tokens with [CLS]/[SEP].')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 32, 'Contexts per forward pass (>= 2).')
_MAX_CONTEXTS = flags.DEFINE_integer('max_contexts', None, 'Use only the first N contexts.')
_SEED = flags.DEFINE_integer('seed', 0, 'Seed of the pair sampling.')
_OUTPUT = flags.DEFINE_string('output', None, 'Optional JSON file for the result.')


def _contexts(path, limit):
  with tf.io.gfile.GFile(embedded.resolve_path(path), 'r') as f:
    lines = [line.strip() for line in f if line.strip()]
  return lines[:limit] if limit else lines


def main(_):
  try:
    encoder, _, vocab, lower_case = loaders.restore_pretrained_encoder(
        _MODEL_DIR.value, _CHECKPOINT_PATH.value)
    contexts = _contexts(_INPUT.value, _MAX_CONTEXTS.value)
    similarity = contextual_score.score_contexts(
        encoder, vocab, lower_case, contexts, _SEQ_LENGTH.value, _BATCH_SIZE.value, _SEED.value,
        log=functools.partial(print, file=sys.stderr))
  except (ValueError, tf.errors.NotFoundError) as e:
    sys.exit(f'error: {e}')
  print(f'intra-context {similarity.intra:.4f}  inter-context {similarity.inter:.4f}  '
        f'contextual score {similarity.score:.4f}  ({similarity.count:,} token pairs, '
        f'{len(contexts):,} contexts)')
  if _OUTPUT.value:
    atomic_files.write_json(_OUTPUT.value, dict(
        model_dir=_MODEL_DIR.value, input=_INPUT.value, contexts=len(contexts),
        token_pairs=similarity.count, intra_context=similarity.intra,
        inter_context=similarity.inter, contextual_score=similarity.score))


def run():
  """The `teams-contextual-score` command; `python tools/contextual_score.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['model_dir', 'input'])


if __name__ == '__main__':
  run()
