"""Learning benchmark: every mini objective pretrained at one FLOP budget on a real corpus.

  python tools/benchmark_learning.py --corpus_dir=../shared/data/corpus/enwiki_2015_extract
      [--objectives=bert,teams,electra_corrupt15] [--bert_steps=9000]
  python tools/benchmark_learning.py --corpus_dir=... --objectives=electra --seed=2 \
      --out_dir=benchmarks/learning_s2

Builds (once) a WordPiece vocabulary and unmasked pretraining records from the corpus (files
wiki_00-48 for training, wiki_49 held out), then trains each `<objective>_mini` with
`teams_tf.train` to the FLOPs of `--bert_steps` BERT-mini steps, and writes
`benchmarks/learning/{<objective>.json,learning.md,learning.json,learning.png}`. Rerunning skips
finished objectives and resumes an interrupted one from its checkpoints
(`teams_lab/learning.py`). `--seed` repeats runs with another pretraining seed, into
their own run directories; give them their own --out_dir. Run it on an otherwise idle machine.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import learning
from teams_lab import learning_data
from teams_lab import learning_report
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CORPUS = flags.DEFINE_string(
    'corpus_dir', None,
    'Directory of wiki_00.txt ... wiki_49.txt.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'learning'),
                                'Vocabulary, records and run directories.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'learning'),
                               'Result files and the report.')
_OBJECTIVES = flags.DEFINE_list(
    'objectives', list(learning.OBJECTIVES),
    'Objectives to run, or mini variants named by their experiment without "_mini" '
    '(electra_corrupt15 runs electra_mini_corrupt15).')
_VOCAB_SIZE = flags.DEFINE_integer('vocab_size', learning.VOCAB_SIZE,
                                   'Target size of the corpus vocabulary.')
_BERT_STEPS = flags.DEFINE_integer(
    'bert_steps', learning.BERT_STEPS,
    'Training budget of every run, in FLOPs of this many BERT-mini steps.')
_INTERVAL = flags.DEFINE_integer('validation_interval', learning.VALIDATION_INTERVAL,
                                 'Steps between evaluations.')
_SEED = flags.DEFINE_integer(
    'seed', None, 'Pretraining seed of every run (teams_tf.train --seed: weight initialization '
    'and sampling); unset, runs are unseeded, as the committed ones are.')

_KEEP_CHECKPOINTS = flags.DEFINE_bool(
    'keep_checkpoints', False, 'Keep every checkpoint of the runs (one per 500 steps), not the '
    'last 2, to fine-tune the encoder along a run: tools/run_glue.py '
    '--init_checkpoint=<run_dir>/ckpt-<step>.')


def main(argv):
  del argv
  runs = learning.mini_runs()
  unknown = sorted(set(_OBJECTIVES.value) - set(runs))
  if unknown:
    variants = ', '.join(sorted(set(runs) - set(learning.OBJECTIVES)))
    sys.exit(f'error: unknown objectives {unknown}; use some of {learning.OBJECTIVES} or a mini '
             f'variant ({variants}).')
  todo = [o for o in _OBJECTIVES.value
          if not os.path.exists(learning.result_file(_OUT_DIR.value, o))]
  data = ('' if os.path.exists(learning_data.vocab_path(_WORK_DIR.value, _VOCAB_SIZE.value))
          else f'builds the corpus vocabulary and records in {_WORK_DIR.value} (about 15 '
          'minutes, once), then ')
  # 40 to 55 training minutes per objective at the default budget (learning.md).
  scale = _BERT_STEPS.value / learning.BERT_STEPS
  print(f'This run {data}pretrains {len(todo)} objective(s) ({", ".join(todo) or "none"}; '
        f'{len(_OBJECTIVES.value) - len(todo)} already in {_OUT_DIR.value}), about '
        f'{40 * scale:.0f} to {55 * scale:.0f} minutes each on 2 cores.', flush=True)
  try:
    setup, flops = learning.default_setup(
        command_lines.required(_CORPUS, '../shared/data/corpus/enwiki_2015_extract'),
        _WORK_DIR.value, _OUT_DIR.value, _VOCAB_SIZE.value, _BERT_STEPS.value,
        _INTERVAL.value, _SEED.value, _KEEP_CHECKPOINTS.value)
  except ValueError as e:
    sys.exit(f'error: {e}')
  # --objectives is left out: the report holds every result file in --out_dir, whichever
  # command wrote it.
  preamble = learning_report.preamble(setup, _BERT_STEPS.value, command_lines.tool_command(
      __file__, (_BERT_STEPS, _SEED, _VOCAB_SIZE, _INTERVAL, _CORPUS, _WORK_DIR, _OUT_DIR),
      always=(_BERT_STEPS,)))
  for objective in _OBJECTIVES.value:
    learning.run_objective(objective, setup, flops[objective])
    learning_report.write_report(setup, preamble)
  learning_report.write_report(setup, preamble)
  print(f'report: {os.path.join(_OUT_DIR.value, "learning.md")}')


if __name__ == '__main__':
  app.run(main)
