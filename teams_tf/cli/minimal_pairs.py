r"""Scores BLiMP minimal pairs with a pretrained model: accuracy per paradigm and phenomenon.

  teams-minimal-pairs --model_dir=/tmp/teams_demo --blimp_dir=../shared/data/blimp \
      --output=/tmp/teams_demo_blimp.json [--methods=masked_lm,rtd] [--random_init --seed=1]
  teams-minimal-pairs --model_dir=/tmp/teams_demo --unigram_corpus=sample:train \
      --blimp_dir=../shared/data/blimp --output=/tmp/unigram_blimp.json

A pair is right when its good sentence scores strictly higher. `--methods` are
`teams_tf/serving/sentence_scoring.py`'s (default: every one the run's pretrainer has: the masked
PLLs of its MLM network and the one-pass score of its kept encoder); `--random_init` scores fresh
weights of the run's shape; `--unigram_corpus` scores with the corpus's add-one unigram
frequencies of the run's vocabulary instead of a model. Writes one JSON with every method's
accuracies and prints the means beside the BLiMP paper's models on the same paradigms.
"""

import os
import sys
import time

from absl import flags
import numpy as np
import tf_keras

from teams_tf.data import input_files
from teams_tf.data import tokenization
from teams_tf.serving import loaders
from teams_tf.serving import minimal_pairs
from teams_tf.serving import sentence_scoring
from teams_tf.training import releases
from teams_tf.training import run_settings
from teams_tf.utils import atomic_files
from teams_tf.utils import entry_points
from teams_tf.utils import hardware

_MODEL_DIR = flags.DEFINE_string('model_dir', None, 'Pretraining model_dir, or a release of one '
                                 '(benchmarks/encoders/<run>).')
_BLIMP_DIR = flags.DEFINE_string('blimp_dir', None, 'Directory of BLiMP <paradigm>.jsonl files.')
_OUTPUT = flags.DEFINE_string('output', None, 'JSON file to write the accuracies to.')
_METHODS = flags.DEFINE_list(
    'methods', None, f'Some of {",".join(sentence_scoring.METHODS)}; default: every method the '
    'run supports.')
_CHECKPOINT_PATH = flags.DEFINE_string(
    'checkpoint_path', None, 'Checkpoint to score; default: the latest in --model_dir.')
_RANDOM_INIT = flags.DEFINE_bool('random_init', False, 'Score fresh weights of the run\'s shape.')
_SEED = flags.DEFINE_integer('seed', None, 'With --random_init: the seed of the fresh weights.')
_UNIGRAM_CORPUS = flags.DEFINE_string(
    'unigram_corpus', None, 'Text files or globs (or sample:train): score with their unigram '
    'token frequencies under the run\'s vocabulary instead of a model.')
_MAX_PAIRS = flags.DEFINE_integer('max_pairs', None, 'Pairs per paradigm (default: all).')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 256, 'Rows (masked copies) per forward pass.')
_JIT_COMPILE = flags.DEFINE_bool(
    'jit_compile', False, 'Compile each forward pass with XLA (about 6% faster for a mini '
    'encoder on 2 CPU cores).')


def _methods(model_dir):
  if _UNIGRAM_CORPUS.value:
    return ['unigram']
  if _METHODS.value:
    return _METHODS.value
  model_config, build = run_settings.pretraining_model(
      run_settings.RunSettings(model_dir).params['task']['model'],
      os.path.join(model_dir, 'params.yaml'))
  return sorted(sentence_scoring.methods(run_settings.built_pretrainer(build, model_config)))


def _score_texts(method, model_dir):
  """(score_texts, network name) of one method."""
  if method == 'unigram':
    settings = run_settings.RunSettings(model_dir)
    vocab = tokenization.load_vocabulary(
        settings.get('vocab_file', None, 'task.train_data.vocab_file'))
    files = input_files.list_input_files(_UNIGRAM_CORPUS.value)
    scorer = minimal_pairs.UnigramScorer(
        vocab, settings.get('lower_case', None, 'task.train_data.lower_case'), files)
    # The files themselves are in the results' `unigram_corpus`.
    return scorer, (f'unigram frequencies of {len(files)} corpus file{"s" * (len(files) != 1)} '
                    f'({scorer.num_tokens:,} tokens)')
  if _SEED.value is not None:
    tf_keras.utils.set_random_seed(_SEED.value)  # The same fresh weights for every method.
  scorer, vocab, lower_case, seq_length = loaders.load_sentence_scorer(
      model_dir, method, _CHECKPOINT_PATH.value, _RANDOM_INIT.value, _BATCH_SIZE.value,
      _JIT_COMPILE.value)
  network = scorer.method.network + (' (random init)' if _RANDOM_INIT.value else '')
  return minimal_pairs.text_scorer(scorer, vocab, lower_case, seq_length), network


def main(argv):
  del argv
  try:
    paradigms = minimal_pairs.read_paradigms(_BLIMP_DIR.value, _MAX_PAIRS.value)
    paper = minimal_pairs.paper_results(_BLIMP_DIR.value, paradigms)
    paper_means = {name: float(np.mean(list(paper[model].values())))
                   for model, name in minimal_pairs.PAPER_MODELS.items()}
    # A release (benchmarks/encoders/*) is unpacked once, its hashes and step checked.
    model_dir = releases.resolve_model_dir(_MODEL_DIR.value)
    methods = _methods(model_dir)
    num_pairs = sum(len(p.good) for p in paradigms)
    print(f'{len(paradigms)} paradigms, {num_pairs:,} pairs; methods: {", ".join(methods)}',
          flush=True)
    results = {}
    for method in methods:
      score_texts, network = _score_texts(method, model_dir)
      print(f'{method}: {network}', flush=True)
      start = time.monotonic()
      outcomes = minimal_pairs.pair_outcomes(score_texts, paradigms,
                                             log=lambda line: print(f'  {line}', flush=True))
      by_uid = minimal_pairs.accuracies(outcomes)
      results[method] = dict(network=network, seconds=round(time.monotonic() - start, 1),
                             paradigms=by_uid, pairs=minimal_pairs.outcome_bits(outcomes),
                             **minimal_pairs.summarize(paradigms, by_uid))
      print(f'{method}: mean over paradigms {100 * results[method]["mean"]:.1f}', flush=True)
  except ValueError as e:
    sys.exit(f'error: {" ".join(str(e).split())}')
  atomic_files.write_json(_OUTPUT.value, dict(
      model_dir=_MODEL_DIR.value, checkpoint_path=_CHECKPOINT_PATH.value,
      random_init=_RANDOM_INIT.value, seed=_SEED.value, unigram_corpus=_UNIGRAM_CORPUS.value,
      blimp_dir=_BLIMP_DIR.value, num_paradigms=len(paradigms), num_pairs=num_pairs,
      machine=hardware.description(), methods=results, paper=paper_means))
  for name, mean in paper_means.items():
    print(f'{name}: {100 * mean:.1f}')
  print(f'wrote {_OUTPUT.value}')


def run():
  """The `teams-minimal-pairs` command; `python tools/minimal_pairs.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['model_dir', 'blimp_dir', 'output'])


if __name__ == '__main__':
  run()
