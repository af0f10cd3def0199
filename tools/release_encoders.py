"""Pretrains mini encoders on the shared Wikipedia extract and releases them into the repository.

  python tools/release_encoders.py --corpus_dir=../shared/data/corpus/enwiki_2015_extract \
      --objectives=bert,electra --seeds=1,2
  python tools/release_encoders.py --corpus_dir=... --objectives=bert,teams --bert_steps=27000

Each (objective, seed) is a learning-benchmark run (`teams_lab/released_runs.py`) to
the FLOPs of `--bert_steps` BERT-mini steps; when it ends, its weights (float16, no optimizer
state), params.yaml, vocabulary, step, FLOPs and sha256 go to
`benchmarks/encoders/<objective>[_<k>x]_seed<seed>/`. Commit that directory: every tool that
takes a pretraining --model_dir takes it too, and checks its hashes and step. Rerunning skips
released runs and resumes an interrupted one from its checkpoints in --work_dir (put it where it
survives a restart). Run it on an otherwise idle machine.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import learning
from teams_lab import released_runs
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CORPUS = flags.DEFINE_string(
    'corpus_dir', None,
    'Directory of wiki_00.txt ... wiki_49.txt.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'learning'),
                                'Vocabulary, records and run directories (checkpoints).')
_RELEASE_DIR = flags.DEFINE_string('release_dir', os.path.join(_ROOT, 'benchmarks', 'encoders'),
                                   'Where each run\'s release directory goes.')
_OBJECTIVES = flags.DEFINE_list('objectives', list(learning.OBJECTIVES), 'Objectives to run.')
flags.register_validator('objectives', lambda names: set(names) <= set(learning.OBJECTIVES),
                         f'use some of {",".join(learning.OBJECTIVES)}.')
_SEEDS = flags.DEFINE_list('seeds', ['1', '2'], 'Pretraining seeds (teams_tf.train --seed).')
_BERT_STEPS = flags.DEFINE_integer(
    'bert_steps', learning.BERT_STEPS,
    'Training budget of every run, in FLOPs of this many BERT-mini steps.')


def main(argv):
  del argv
  try:
    seeds = [int(seed) for seed in _SEEDS.value]
  except ValueError:
    sys.exit(f'error: --seeds={",".join(_SEEDS.value)} must be integers, e.g. --seeds=1,2.')
  # Seed-major: the first seed of every objective is released before any second one.
  corpus_dir = command_lines.required(_CORPUS, '../shared/data/corpus/enwiki_2015_extract')
  runs = [(objective, seed) for seed in seeds for objective in _OBJECTIVES.value]
  names = [released_runs.run_name(o, s, _BERT_STEPS.value) for o, s in runs]
  print(released_runs.outlook(names, _RELEASE_DIR.value, _BERT_STEPS.value), flush=True)
  failed = []
  for (objective, seed), name in zip(runs, names):
    try:
      release = released_runs.release_run(objective, seed, _BERT_STEPS.value, corpus_dir,
                                          _WORK_DIR.value, _RELEASE_DIR.value)
    except ValueError as e:
      sys.exit(f'error: {" ".join(str(e).split())}')
    if release is None:
      failed.append(name)
  if failed:
    sys.exit(f'error: {", ".join(failed)} did not finish; see the logs named above.')


if __name__ == '__main__':
  app.run(main)
