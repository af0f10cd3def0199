r"""Time to accuracy: teams_tf against Hugging Face and Model Garden on the same corpus and cores.

  python tools/benchmark_time_to_accuracy.py --corpus_dir=../shared/data/corpus/enwiki_2015_extract
  python tools/benchmark_time_to_accuracy.py --corpus_dir=... --implementations=hugging_face
  python tools/benchmark_time_to_accuracy.py --corpus_dir=... \
      --implementations=teams_tf_teams,model_garden_teams --train_steps=4000

Pretrains the BERT-mini recipe with each implementation (`teams_lab/time_to_accuracy.py`:
teams_tf, teams_tf with absolute positions, Model Garden's bert/pretraining, Hugging Face's
BertForMaskedLM under transformers.Trainer) and the TEAMS-mini recipe with teams_tf and Model
Garden's official/projects/teams, from the learning benchmark's records, one after the other,
then scores every kept checkpoint on the same held-out set (TEAMS: generator MLM accuracy and
RTD AUC) and writes
`benchmarks/time_to_accuracy/<machine>/<implementation>.json` and the report
`benchmarks/time_to_accuracy/time_to_accuracy.{md,json,png}`. Each BERT-mini run takes about
90-110 minutes on a 2-core AMD EPYC (compute-bound at about 1.8 steps/s), TEAMS-mini runs longer
(a step costs more, Model Garden's TEAMS more than ours): give that pair fewer --train_steps,
the same for both, in an invocation of its own. Rerunning on the same machine
skips finished ones and resumes an interrupted one from its checkpoints. Ratios compare runs of
one machine only (its CPU signature, `teams_tf.utils.hardware`): on a new CPU, run teams_tf there
too. Run it on an otherwise idle machine: its minutes are the result.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import learning
from teams_lab import learning_data
from teams_lab import released_runs
from teams_lab import time_to_accuracy
from teams_lab import time_to_accuracy_report
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import tokenization
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CORPUS = flags.DEFINE_string('corpus_dir', None, 'Directory of wiki_00.txt ... wiki_49.txt.')
_WORK_DIR = flags.DEFINE_string(
    'work_dir', command_lines.scratch_dir(__file__, 'learning'),
    'Vocabulary and records (shared with the learning benchmark), each implementation\'s input, '
    'and the run directories (under time_to_accuracy/).')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'time_to_accuracy'),
                               'Result files and the report.')
_IMPLEMENTATIONS = flags.DEFINE_list('implementations', list(time_to_accuracy.IMPLEMENTATIONS),
                                     'Implementations to run, in this order.')
_TRAIN_STEPS = flags.DEFINE_integer('train_steps', 10_000,
                                    'Steps of every run (the recipe\'s 10,000).')
_INTERVAL = flags.DEFINE_integer('checkpoint_interval', 500,
                                 'Steps between the checkpoints that are scored.')
_SEED = flags.DEFINE_integer('seed', 1, 'Seed of every run that takes one.')


def main(argv):
  del argv
  unknown = sorted(set(_IMPLEMENTATIONS.value) - set(time_to_accuracy.IMPLEMENTATIONS))
  if unknown:
    sys.exit(f'error: unknown implementations {unknown}; use some of '
             f'{", ".join(time_to_accuracy.IMPLEMENTATIONS)}.')
  work_dir = _WORK_DIR.value
  try:
    released_runs.reuse_vocabulary(work_dir, os.path.join(_ROOT, 'benchmarks', 'encoders'))
    vocab, train, valid = learning_data.prepare_data(
        command_lines.required(_CORPUS, '../shared/data/corpus/enwiki_2015_extract'), work_dir,
        learning.VOCAB_SIZE, time_to_accuracy.seq_length())
  except ValueError as e:
    sys.exit(f'error: {e}')
  setup = time_to_accuracy.Setup(
      train_input=train, validation_input=valid, vocab_file=vocab,
      vocab_size=tokenization.load_vocabulary(vocab).size, work_dir=work_dir,
      out_dir=_OUT_DIR.value, train_steps=_TRAIN_STEPS.value,
      checkpoint_interval=_INTERVAL.value, seed=_SEED.value)
  done = [name for name in time_to_accuracy.IMPLEMENTATIONS if os.path.exists(
      time_to_accuracy.result_file(setup.out_dir, name, setup.machine))]
  print(f'machine: {setup.machine}; results on it: {", ".join(done) or "none"}', flush=True)
  if time_to_accuracy_report.OURS not in done + _IMPLEMENTATIONS.value:
    print(f'note: no {time_to_accuracy_report.OURS} run on this machine yet, so the peers run now '
          'get no ratio; add it to --implementations.', flush=True)
  preamble = time_to_accuracy_report.preamble(setup, command_lines.tool_command(
      __file__, (_CORPUS, _TRAIN_STEPS, _INTERVAL, _SEED, _WORK_DIR, _OUT_DIR)))
  for name in _IMPLEMENTATIONS.value:
    try:
      time_to_accuracy.run_implementation(setup, name)
    except ValueError as e:
      sys.exit(f'error: {e}')
    time_to_accuracy_report.write_report(setup.out_dir, preamble)
  time_to_accuracy_report.write_report(setup.out_dir, preamble)
  print(f'report: {os.path.join(setup.out_dir, "time_to_accuracy.md")}')


if __name__ == '__main__':
  app.run(main)
