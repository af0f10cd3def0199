"""One pretraining run fine-tuned on GLUE at checkpoints along it, with the replication's protocol.

C and G: the corpus and the GLUE download, e.g. ../shared/data/corpus/enwiki_2015_extract and
../shared/data/glue.

  python tools/benchmark_learning.py --corpus_dir=C --objectives=teams --seed=2 --keep_checkpoints \
      --out_dir=benchmarks/learning_seed2
  python tools/replicate.py --corpus_dir=C --glue_dir=G --encoders=teams --pretraining_seed=2 \
      --learning_dir=benchmarks/learning_seed2 --out_dir=benchmarks/replication_seed2 \
      --random_init_dir=benchmarks/replication
  python tools/finetune_along_run.py --glue_dir=G --encoder=teams --steps=1600,3100,4600 \
      --learning_dir=benchmarks/learning_seed2 --replication_dir=benchmarks/replication_seed2 \
      --out_dir=benchmarks/along_run_seed2

Fine-tunes the run's checkpoints at --steps (`teams_lab/along_run.py`) at the
learning rates the replication chose for its last checkpoint, and writes
<out_dir>/<encoder>.{md,json,png}: GLUE dev against pretraining FLOPs, from random init to the
replication's row. Rerunning skips finished units. Run it on an idle machine.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import along_run
from teams_lab import finetune_protocols
from teams_lab import replication
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.finetuning import glue
from teams_tf.finetuning import sweep
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BENCHMARKS = os.path.join(_ROOT, 'benchmarks')
_ENCODER = flags.DEFINE_enum(
    'encoder', None, [e for e in replication.ENCODERS if e != replication.RANDOM],
    'The pretraining run\'s objective.')
_STEPS = flags.DEFINE_list('steps', None, 'Checkpoint steps to fine-tune, before the run\'s last.')
_LEARNING_DIR = flags.DEFINE_string(
    'learning_dir', os.path.join(_BENCHMARKS, 'learning'),
    "The run's learning result (benchmark_learning.py's --out_dir).")
_REPLICATION_DIR = flags.DEFINE_string(
    'replication_dir', os.path.join(_BENCHMARKS, 'replication'),
    "The run's replication (replicate.py's --out_dir), which has fine-tuned its last checkpoint.")
_RANDOM_INIT_DIR = flags.DEFINE_string(
    'random_init_dir', os.path.join(_BENCHMARKS, 'replication'),
    'The replication whose random-init runs are the floor.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_BENCHMARKS, 'along_run'),
                               'Committed unit results and the report.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'learning'),
                                'Pretraining run directories, GLUE records and sweep runs.')
_GLUE_DIR = flags.DEFINE_string('glue_dir', None,
                                'GLUE download with SST-2/, CoLA/ and STS-B/.')
_SEEDS = flags.DEFINE_integer('seeds', 3, 'Seeds per step and task.')
_REPORT_ONLY = flags.DEFINE_bool('report_only', False, 'Only rewrite the report.')
flags.mark_flags_as_required(['encoder', 'steps'])
flags.register_validator('steps', lambda steps: all(s.isdigit() and int(s) > 0 for s in steps),
                         'give positive integers, e.g. --steps=1500,3000.')


def main(_):
  try:
    protocol = finetune_protocols.FineTuneProtocol(seeds=_SEEDS.value)
    along, pretraining = along_run.build(
        protocol, _ENCODER.value, [int(step) for step in _STEPS.value], _LEARNING_DIR.value,
        _REPLICATION_DIR.value, _RANDOM_INIT_DIR.value, _OUT_DIR.value, _WORK_DIR.value)
    command = command_lines.tool_command(
        __file__, (_ENCODER, _STEPS, _SEEDS, _LEARNING_DIR, _REPLICATION_DIR, _RANDOM_INIT_DIR,
                   _OUT_DIR), always=(_ENCODER, _STEPS))

    def report():
      return along_run.write_report(along, pretraining, command)

    to_run = [] if _REPORT_ONLY.value else along_run.to_run(along)
    if to_run:
      along_run.check(along)
      print(f'This run fine-tunes {len(to_run)} unit(s) (about 3 minutes each on 2 cores: '
            f'{len(to_run) * 3 / 60:.1f} hours), then rewrites the report; --report_only '
            'rewrites it alone, in seconds.', flush=True)
      vocab_file = pretraining['setup']['vocab_file']
      if not os.path.exists(vocab_file):
        raise ValueError(
            f'The pretraining run\'s vocabulary {vocab_file} is gone with its work directory: '
            'the units left need the run itself. Pretrain it with tools/benchmark_learning.py '
            f'--objectives={_ENCODER.value} --keep_checkpoints --out_dir=<a new dir> (40 to 55 '
            'minutes), fine-tune it with tools/replicate.py, then run this again.')
      replication.prepare_glue(
          protocol, command_lines.required(_GLUE_DIR, '../shared/data/glue'), vocab_file,
          along.sweep.data_dir, glue.convert_tsv)
      along_run.run(along, sweep.run_fields, report)
    report()
  except ValueError as e:
    sys.exit(f'error: {" ".join(str(e).split())}')
  print(f'report: {along_run.report_path(along)}')


if __name__ == '__main__':
  app.run(main)
