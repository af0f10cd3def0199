r"""Scores sentences with a SCRIPT model: one-pass self-critic PLL and/or masked-LM PLL.

  teams-score --model_dir=/tmp/script_demo --input=sentences.txt
  echo 'The cat sat on the mat.' | teams-score --model_dir=/tmp/script_demo

One sentence (or passage) per input line; writes one tab-separated line per input line to stdout:
the scores of `--mode` (self_critic: SCRIPT Eq. 7, one encoder pass; masked_lm: Salazar et al.,
one pass per token), the number of tokens summed over, and the text. Progress (sentences/s, ETA)
goes to stderr. Texts longer than the run's sequence length (`--seq_length`) are truncated.
"""

import sys

from absl import flags
import tensorflow as tf

from teams_tf.serving import loaders
from teams_tf.serving import pll_scoring
from teams_tf.utils import entry_points
from teams_tf.utils import progress

_MODEL_DIR = flags.DEFINE_string('model_dir', None, 'SCRIPT pretraining model_dir.')
_CHECKPOINT_PATH = flags.DEFINE_string(
    'checkpoint_path', None, 'Checkpoint to use; default: the latest in --model_dir.')
_INPUT = flags.DEFINE_string('input', '-', 'Text file, one sentence per line; - reads stdin.')
_MODE = flags.DEFINE_enum('mode', 'both', [*pll_scoring.MODES, 'both'],
                          'Which pseudo-log-likelihood(s) to compute.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 32, 'Sentences per forward pass.')
_SEQ_LENGTH = flags.DEFINE_integer(
    'seq_length', None, 'Packed length T; default: task.train_data.seq_length of the run.')


def _read_lines(path):
  if path == '-':
    return [line.rstrip('\n') for line in sys.stdin]
  with tf.io.gfile.GFile(path, 'r') as f:
    return [line.rstrip('\n') for line in f]


def main(_):
  try:
    scorer = loaders.load_pll_scorer(
        _MODEL_DIR.value, _CHECKPOINT_PATH.value, _SEQ_LENGTH.value)
    lines = _read_lines(_INPUT.value)
  except (ValueError, tf.errors.NotFoundError) as e:
    sys.exit(f'error: {e}')
  modes = pll_scoring.MODES if _MODE.value == 'both' else (_MODE.value,)
  functions = dict(self_critic=pll_scoring.self_critic_pll, masked_lm=pll_scoring.masked_lm_pll)

  @tf.function
  def score(texts):
    inputs, weights = scorer.pack(texts)
    extra = dict(masked_lm=(scorer.mask_id,), self_critic=())
    results = {mode: functions[mode](scorer.model, inputs, weights, *extra[mode])
               for mode in modes}
    return results, tf.cast(tf.reduce_sum(weights, -1), tf.int32)

  print('\t'.join([f'{mode}_pll' for mode in modes] + ['num_tokens', 'text']))
  meter = progress.ProgressMeter()
  done = 0
  for begin in range(0, len(lines), _BATCH_SIZE.value):
    texts = lines[begin:begin + _BATCH_SIZE.value]
    results, counts = score(tf.constant(texts))
    for i, text in enumerate(texts):
      values = [f'{float(results[mode][i]):.4f}' for mode in modes]
      print('\t'.join(values + [str(int(counts[i])), text]), flush=True)
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
