"""Learning benchmark: every mini objective pretrained at one FLOP budget on a real corpus.

  python tools/benchmark_learning.py [--objectives=bert,teams] [--bert_steps=3000]

Builds (once) a WordPiece vocabulary and unmasked pretraining records from the corpus (files
wiki_00-48 for training, wiki_49 held out), then trains each `<objective>_mini` with
`teams_tf.train` to the FLOPs of `--bert_steps` BERT-mini steps, and writes
`benchmarks/learning/{<objective>.json,learning.md,learning.json,learning.png}`. Rerunning skips
finished objectives and resumes an interrupted one from its checkpoints
(`teams_tf/benchmarking/learning.py`). Run it on an otherwise idle machine.
"""

import os
import platform
import subprocess
import sys

from absl import app
from absl import flags

from official.core import exp_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.benchmarking import learning
from teams_tf.data import tokenization
from teams_tf.training import experiment_flops

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CORPUS = flags.DEFINE_string(
    'corpus_dir', os.path.join(_ROOT, '..', 'shared', 'data', 'corpus', 'enwiki_2015_extract'),
    'Directory of wiki_00.txt ... wiki_49.txt.')
_WORK_DIR = flags.DEFINE_string('work_dir', '/tmp/teams_tf_learning',
                                'Vocabulary, records and run directories.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'learning'),
                               'Result files and the report.')
_OBJECTIVES = flags.DEFINE_list('objectives', list(learning.OBJECTIVES), 'Objectives to run.')
_VOCAB_SIZE = flags.DEFINE_integer('vocab_size', 8192, 'Target size of the corpus vocabulary.')
_BERT_STEPS = flags.DEFINE_integer(
    'bert_steps', 3000, 'Training budget of every run, in FLOPs of this many BERT-mini steps.')
_INTERVAL = flags.DEFINE_integer('validation_interval', 500, 'Steps between evaluations.')


def _run(command):
  print('$', ' '.join(command), flush=True)
  subprocess.run(command, check=True)


def _prepare(work_dir, seq_length):
  """Vocabulary and records under `work_dir`, built once; returns (vocab, train, validation)."""
  corpus = _CORPUS.value
  missing = [f'wiki_{i:02d}.txt' for i in range(50)
             if not os.path.exists(os.path.join(corpus, f'wiki_{i:02d}.txt'))]
  if missing:
    sys.exit(f'error: --corpus_dir={corpus} lacks {", ".join(missing[:3])}...; point it at the '
             'shared Wikipedia extract (shared/data/corpus/enwiki_2015_extract).')
  train_files = ','.join(os.path.join(corpus, f'wiki_{i:02d}.txt') for i in range(49))
  held_out = os.path.join(corpus, 'wiki_49.txt')
  vocab = os.path.join(work_dir, f'vocab_{_VOCAB_SIZE.value}.txt')
  if not os.path.exists(vocab):
    _run([sys.executable, os.path.join(_ROOT, 'tools', 'build_vocab.py'), f'--input={train_files}',
          f'--output={vocab}', f'--vocab_size={_VOCAB_SIZE.value}'])
  records = {}
  for split, files in (('train', train_files), ('valid', held_out)):
    out = os.path.join(work_dir, f'records_{_VOCAB_SIZE.value}_{split}')
    # The summary is written last: without it the directory holds an interrupted run.
    if not os.path.exists(os.path.join(out, 'pretrain-summary.json')):
      _run([sys.executable, os.path.join(_ROOT, 'tools', 'create_pretraining_data.py'),
            f'--input={files}', f'--vocab_file={vocab}', f'--output_dir={out}',
            '--output_kind=unmasked', f'--seq_length={seq_length}', '--num_shards=8',
            '--overwrite'])
    records[split] = os.path.join(out, 'pretrain-*.tfrecord')
  return vocab, records['train'], records['valid']


def main(argv):
  del argv
  unknown = sorted(set(_OBJECTIVES.value) - set(learning.OBJECTIVES))
  if unknown:
    sys.exit(f'error: unknown objectives {unknown}; use some of {learning.OBJECTIVES}.')
  os.makedirs(_WORK_DIR.value, exist_ok=True)
  os.makedirs(_OUT_DIR.value, exist_ok=True)
  recipe = exp_factory.get_exp_config('bert_mini')  # Every mini objective's data and trainer.
  seq_length = recipe.task.train_data.seq_length
  vocab, train, valid = _prepare(_WORK_DIR.value, seq_length)
  vocab_size = tokenization.load_vocabulary(vocab).size
  setup = learning.Setup(
      train_input=train, validation_input=valid, input_format='tfrecord', vocab_file=vocab,
      vocab_size=vocab_size, max_train_flops=0.0, validation_interval=_INTERVAL.value,
      validation_steps=recipe.trainer.validation_steps, work_dir=_WORK_DIR.value,
      out_dir=_OUT_DIR.value)
  flops = {}
  for objective in learning.OBJECTIVES:
    params = exp_factory.get_exp_config(f'{objective}_mini')
    params.task.model.encoder.vocab_size = vocab_size
    flops[objective] = experiment_flops.step_flops(params)
  setup.max_train_flops = float(_BERT_STEPS.value * flops['bert'])
  preamble = '\n'.join([
      '# Learning benchmark: mini objectives at equal training FLOPs', '',
      f'`python tools/benchmark_learning.py --bert_steps={_BERT_STEPS.value}`: every '
      f'`<objective>_mini` (registry/experiments.py) trained to {setup.max_train_flops:.3g} '
      f'FLOPs ({_BERT_STEPS.value:,} BERT-mini steps) on wiki_00-48 of the shared Wikipedia '
      f'extract, held-out evaluation on wiki_49 '
      f'({recipe.task.validation_data.mask_rate:.0%} masking, {setup.validation_steps} batches '
      f'of {recipe.task.validation_data.global_batch_size} x {seq_length} tokens) '
      f'every {_INTERVAL.value} steps; corpus vocabulary of {vocab_size:,} WordPiece tokens; '
      f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores.'])
  for objective in _OBJECTIVES.value:
    learning.run_objective(objective, setup, flops[objective])
    learning.write_report(setup, preamble)
  learning.write_report(setup, preamble)
  print(f'report: {os.path.join(_OUT_DIR.value, "learning.md")}')


if __name__ == '__main__':
  app.run(main)
