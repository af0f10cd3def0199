"""Fine-tunes one pretraining checkpoint on GLUE tasks with several seeds; median/mean/std table.

  teams-run-glue --tasks=sst2,cola --seeds=3 --size=demo --data_dir=/tmp/glue \
      --init_checkpoint=/tmp/teams_demo --output_dir=/tmp/glue_runs \
      [--train_steps=N | --epochs=E] [--params_override=...] [--select_epoch]

`--data_dir` holds `teams-create-glue-data` outputs, one folder per task:
`<data_dir>/<task>/{train.tfrecord,dev.tfrecord,meta_data.json}`. Runs go to
`<output_dir>/<task>/seed_<k>` (finished ones are skipped when run again), the tables to
`<output_dir>/results.md` and `results.json`; `teams_tf/finetuning/sweep.py` describes the runs and
`finetune_config.py` their configs.
"""

import sys

from absl import flags

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.finetuning import glue_metrics
from teams_tf.finetuning import sweep
from teams_tf.utils import entry_points

_TASKS = flags.DEFINE_list('tasks', None, f'GLUE tasks: {",".join(glue_metrics.TASK_METRICS)}.')
_SEEDS = flags.DEFINE_string(
    'seeds', '3', 'N (runs seeds 1..N) or a comma-separated list of seeds (one seed k: "k,").')
_SIZE = flags.DEFINE_enum('size', None, ['demo', 'mini', 'small', 'base', 'large'],
                          'Encoder size: the experiment is glue_<task>_<size>.')
_DATA_DIR = flags.DEFINE_string('data_dir', None, 'Folder with <task>/ from create_glue_data.py.')
_INIT_CHECKPOINT = flags.DEFINE_string(
    'init_checkpoint', None, 'Pretraining model_dir or checkpoint prefix ("" = random init).')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', None, 'Runs, result.json files and the tables.')
_TRAIN_STEPS = flags.DEFINE_integer(
    'train_steps', None, 'Train steps per run (instead of --epochs).')
_EPOCHS = flags.DEFINE_float(
    'epochs', None, 'Epochs per run (default: the experiment\'s; Table 6: 5, demo and mini: 3).')
_PARAMS_OVERRIDE = flags.DEFINE_string(
    'params_override', None, 'Model Garden override (YAML/JSON string or k=v,...) for every run.')
_SELECT_EPOCH = flags.DEFINE_bool(
    'select_epoch', False, 'Validate on each task\'s heldout.tfrecord (teams-create-glue-data '
    '--heldout_examples) after every epoch and score dev at the best epoch, not the last.')


def main(argv):
  del argv
  settings = sweep.SweepSettings(
      tasks=_TASKS.value, seeds=_SEEDS.value, size=_SIZE.value, data_dir=_DATA_DIR.value,
      init_checkpoint=_INIT_CHECKPOINT.value, output_dir=_OUTPUT_DIR.value,
      train_steps=_TRAIN_STEPS.value, epochs=_EPOCHS.value,
      params_override=_PARAMS_OVERRIDE.value, select_epoch=_SELECT_EPOCH.value)
  try:
    plan = sweep.prepare(settings)
  except ValueError as e:  # Bad flags or data: one line, no stack trace.
    sys.exit(f'error: {" ".join(str(e).split())}')
  print(sweep.run(settings, plan))


def run():
  """The `teams-run-glue` command; `python tools/run_glue.py` in a clone."""
  entry_points.run(main, sys.modules[__name__],
                   required=['tasks', 'size', 'data_dir', 'init_checkpoint', 'output_dir'])


if __name__ == '__main__':
  run()
