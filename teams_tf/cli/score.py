r"""Scores sentences with a pretrained model: log-likelihood-like scores of any objective.

  teams-score --model_dir=/tmp/teams_demo --input=sentences.txt
  echo 'The cat sat on the mat.' | teams-score --model_dir=/tmp/script_demo --methods=self_critic

One sentence (or passage) per input line; writes one tab-separated line per input line to stdout:
the score of each of `--methods` (`teams_tf/serving/sentence_scoring.py`; default every one the
run's pretrainer has: the masked-LM pseudo-log-likelihoods of its MLM network, one pass per token,
and the one-pass score of its kept encoder, e.g. SCRIPT's self-critic PLL, Eq. 7), the number of
tokens summed over, and the text. Progress (sentences/s, ETA) goes to stderr. Texts longer than
the run's sequence length (`--seq_length`) are truncated.
"""

import sys

from absl import flags
import tensorflow as tf

from teams_tf.data import tokenization
from teams_tf.serving import loaders
from teams_tf.serving import sentence_scoring
from teams_tf.training import releases
from teams_tf.utils import entry_points
from teams_tf.utils import progress

_MODEL_DIR = flags.DEFINE_string('model_dir', None, 'Pretraining model_dir, or a release of one '
                                 '(benchmarks/encoders/<run>).')
_CHECKPOINT_PATH = flags.DEFINE_string(
    'checkpoint_path', None, 'Checkpoint to use; default: the latest in --model_dir.')
_INPUT = flags.DEFINE_string('input', '-', 'Text file, one sentence per line; - reads stdin.')
_METHODS = flags.DEFINE_list(
    'methods', None, f'Some of {",".join(sentence_scoring.METHODS)}; default: every method the '
    'run supports.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 32, 'Sentences packed at a time.',
                                   lower_bound=1)
_SEQ_LENGTH = flags.DEFINE_integer(
    'seq_length', None, 'Packed length T; default: task.train_data.seq_length of the run.')


def _read_lines(path):
  if path == '-':
    return [line.rstrip('\n') for line in sys.stdin]
  with tf.io.gfile.GFile(path, 'r') as f:
    return [line.rstrip('\n') for line in f]


def main(_):
  try:
    scorers, vocab, lower_case, seq_length = loaders.load_sentence_scorers(
        releases.resolve_model_dir(_MODEL_DIR.value), _METHODS.value, _CHECKPOINT_PATH.value,
        seq_length=_SEQ_LENGTH.value)
    lines = _read_lines(_INPUT.value)
  except (ValueError, tf.errors.NotFoundError) as e:
    sys.exit(f'error: {" ".join(str(e).split())}')
  tokenizer = tokenization.build_tokenizer(vocab, lower_case)
  print('\t'.join([*scorers, 'num_tokens', 'text']))
  meter = progress.ProgressMeter()
  done = 0
  for begin in range(0, len(lines), _BATCH_SIZE.value):
    texts = lines[begin:begin + _BATCH_SIZE.value]
    ids, mask, weights = sentence_scoring.packed_texts(tokenizer, vocab, texts, seq_length)
    scores = [scorer(ids, mask, weights) for scorer in scorers.values()]
    for i, text in enumerate(texts):
      values = [f'{float(s[i]):.4f}' for s in scores]
      print('\t'.join(values + [str(int(weights[i].sum())), text]), flush=True)
    done += len(texts)
    if meter.due():
      print(f'{done:,}/{len(lines):,} sentences, {meter.rate(done):,.1f} sentences/s, '
            f'{meter.timing(done / len(lines))}', file=sys.stderr)
  print(f'scored {done:,} sentences in {meter.elapsed():.1f} s ({meter.rate(done):,.1f} '
        'sentences/s)', file=sys.stderr)


def run():
  """The `teams-score` command; `python tools/score.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['model_dir'])


if __name__ == '__main__':
  run()
