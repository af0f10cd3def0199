"""Compute-matched mini replication: mini encoders and random init fine-tuned on GLUE.

  python tools/replicate.py --corpus_dir=C --glue_dir=G [--encoders=teams,electra,bert,random]
  python tools/replicate.py --corpus_dir=C --glue_dir=G --bert_steps=18000 --learning_dir=L
      --out_dir=R  # another budget
  python tools/replicate.py --corpus_dir=C --glue_dir=G --encoders=electra --pretraining_seed=2
      --learning_dir=L --out_dir=R --random_init_dir=M  # another run; M: the main --out_dir
  python tools/replicate.py --report_only --other_sweeps=R  # R's runs widen the seed spread

Pretrains (or reuses) every mini objective at equal FLOPs as tools/benchmark_learning.py does,
fine-tunes each kept encoder and a random-init one (`teams_lab/replication.py`) and
writes benchmarks/replication/; rerunning skips finished units. Run it on an idle machine. C and
G: the corpus and the GLUE download (../shared/data/corpus/enwiki_2015_extract,
../shared/data/glue).
"""

import functools
import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from official.core import exp_factory

from teams_lab import finetune_protocols
from teams_lab import learning
from teams_lab import replication
from teams_lab import replication_report
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.finetuning import glue
from teams_tf.finetuning import sweep
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CORPUS = flags.DEFINE_string('corpus_dir', None,
                              'Directory of wiki_00.txt ... wiki_49.txt.')
_GLUE_DIR = flags.DEFINE_string('glue_dir', None,
                                'GLUE download with SST-2/, CoLA/ and STS-B/.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'learning'),
                                'Vocabulary, records, GLUE records and run directories.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'replication'),
                               'Committed unit results and the report.')
_BERT_STEPS = flags.DEFINE_integer(
    'bert_steps', learning.BERT_STEPS, 'Pretraining budget of every objective, in FLOPs of '
    'this many BERT-mini steps (as tools/benchmark_learning.py).')
_ENCODERS = flags.DEFINE_list('encoders', list(replication.ENCODERS), 'Encoders to fine-tune.')
flags.register_validator('encoders', lambda names: set(names) <= set(replication.ENCODERS),
                         f'use some of {",".join(replication.ENCODERS)}.')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Seeds at the chosen learning rate.')
_REPORT_ONLY = flags.DEFINE_bool('report_only', False, 'Only rewrite the report.')
_LEARNING_DIR = flags.DEFINE_string('learning_dir', os.path.join(_ROOT, 'benchmarks', 'learning'),
                                    "Pretraining results (benchmark_learning.py's --out_dir).")
_PRETRAINING_SEED = flags.DEFINE_integer(
    'pretraining_seed', None, "The pretraining runs' seed (benchmark_learning.py's --seed).")
_OTHER_SWEEPS = flags.DEFINE_list(
    'other_sweeps', [], 'Out dirs of this protocol over other pretraining runs of the encoders '
    '(e.g. benchmarks/replication_seed2): the report lists their GLUE averages and counts their '
    'range as seed spread in the paper sentences.')
_RANDOM_INIT_DIR = flags.DEFINE_string(
    'random_init_dir', None, 'Out dir whose random-init runs this sweep compares with instead of '
    'fine-tuning its own (random init does not depend on the pretraining run: give a sweep of '
    '--pretraining_seed the main sweep, e.g. benchmarks/replication).')



def main(_):
  try:
    protocol = finetune_protocols.FineTuneProtocol(seeds=_SEEDS.value)
  except ValueError as e:
    sys.exit(f'error: --seeds: {e}')
  report = functools.partial(
      replication_report.write_report, _OUT_DIR.value, _LEARNING_DIR.value, protocol,
      exp_factory.get_exp_config('bert_mini'), _BERT_STEPS.value,
      command_lines.tool_command(
          __file__,
          (_BERT_STEPS, _SEEDS, _PRETRAINING_SEED, _LEARNING_DIR, _OUT_DIR, _OTHER_SWEEPS,
           _RANDOM_INIT_DIR), always=(_BERT_STEPS, _SEEDS)),
      _OTHER_SWEEPS.value, _RANDOM_INIT_DIR.value)
  if not _REPORT_ONLY.value:
    encoders = [encoder for encoder in replication.ENCODERS if encoder in _ENCODERS.value]
    if _RANDOM_INIT_DIR.value and replication.RANDOM in encoders:
      encoders.remove(replication.RANDOM)
      print(f'not fine-tuning {replication.RANDOM}: --random_init_dir gives its runs '
            f'({_RANDOM_INIT_DIR.value})')
    print(replication.outlook(protocol, _OUT_DIR.value, _LEARNING_DIR.value, _WORK_DIR.value,
                              encoders), flush=True)
    try:
      setup, flops = learning.default_setup(
          command_lines.required(_CORPUS, '../shared/data/corpus/enwiki_2015_extract'),
          _WORK_DIR.value, _LEARNING_DIR.value, learning.VOCAB_SIZE,
          _BERT_STEPS.value, learning.VALIDATION_INTERVAL, _PRETRAINING_SEED.value)
      runs = replication.prepare(protocol, encoders, setup, flops,
                                 command_lines.required(_GLUE_DIR, '../shared/data/glue'),
                                 _OUT_DIR.value, _WORK_DIR.value, glue.convert_tsv)
      replication.run(runs, encoders, sweep.run_fields, report)
    except ValueError as e:
      sys.exit(f'error: {" ".join(str(e).split())}')
  report()
  print(f'report: {os.path.join(_OUT_DIR.value, "replication.md")}')


if __name__ == '__main__':
  app.run(main)
