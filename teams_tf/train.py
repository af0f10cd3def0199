"""Pretraining entry point: Model Garden's flags and `train_lib`, plus clear input errors.

  python -m teams_tf.train --experiment=teams_demo --mode=train_and_eval \
      --model_dir=/tmp/teams_demo [--params_override=...] [--gin_file=...] [--gin_params=...]
  python -m teams_tf.train --list_experiments

All logic lives in Model Garden (`official.core.train_lib`) and in the registered tasks; this
file only parses flags, reports bad experiment names, overrides and gin bindings in one line,
and says what it runs and where it writes.
"""

import os
import sys

from absl import app
from absl import flags
from absl import logging
import gin
import tensorflow as tf

from official.common import distribute_utils
from official.common import flags as tfm_flags
from official.core import exp_factory
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import performance

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import experiments

FLAGS = flags.FLAGS
_LIST_EXPERIMENTS = flags.DEFINE_bool(
    'list_experiments', False, 'Print every registered experiment with a one-line description '
    'and exit.')


def _fail(message):
  """Exits with a one-line error instead of a stack trace."""
  sys.exit(f'error: {message}')


def _parse_gin():
  try:
    gin.parse_config_files_and_bindings(FLAGS.gin_file, FLAGS.gin_params)
  except (IOError, ValueError, SyntaxError) as e:
    _fail(f'bad gin configuration ({FLAGS.gin_file or ""} {FLAGS.gin_params or ""}): '
          f'{" ".join(str(e).split())}')
  if FLAGS.gin_file or FLAGS.gin_params:
    logging.info('gin bindings:\n%s', gin.config_str())


def _parse_params():
  """Experiment config from --experiment, --config_file and --params_override."""
  try:
    exp_factory.get_exp_config(FLAGS.experiment)
  except LookupError:
    _fail(f'unknown experiment {FLAGS.experiment!r}; registered: '
          f'{", ".join(experiments.experiment_names())}')
  try:
    return train_utils.parse_configuration(FLAGS)
  # Model Garden reads a --params_override it cannot parse as key=value pairs as a YAML path,
  # hence NotFoundError (e.g. for an unquoted glob with brackets).
  except (KeyError, ValueError, AttributeError, TypeError, tf.errors.NotFoundError) as e:
    _fail(f'bad --config_file/--params_override for {FLAGS.experiment!r}: '
          f'{" ".join(str(e).split())}')


def _list_experiments():
  names = experiments.experiment_names()
  width = max(len(name) for name in names)
  for name in names:
    print(f'{name:{width}}  {experiments.describe(name)}')


def main(_):
  if _LIST_EXPERIMENTS.value:
    _list_experiments()
    return
  _parse_gin()
  params = _parse_params()
  model_dir = FLAGS.model_dir
  if 'train' in FLAGS.mode:
    train_utils.serialize_config(params, model_dir)
  logging.info('Running %s of %r; checkpoints, TensorBoard summaries and params.yaml in %s',
               FLAGS.mode, FLAGS.experiment, os.path.abspath(model_dir))
  if params.runtime.mixed_precision_dtype:
    performance.set_mixed_precision_policy(params.runtime.mixed_precision_dtype)
  strategy = distribute_utils.get_distribution_strategy(
      distribution_strategy=params.runtime.distribution_strategy,
      all_reduce_alg=params.runtime.all_reduce_alg,
      num_gpus=params.runtime.num_gpus,
      tpu_address=params.runtime.tpu)
  try:
    with strategy.scope():
      task = task_factory.get_task(params.task, logging_dir=model_dir)
  except ValueError as e:
    _fail(str(e))
  train_lib.run_experiment(
      distribution_strategy=strategy,
      task=task,
      mode=FLAGS.mode,
      params=params,
      model_dir=model_dir)
  train_utils.save_gin_config(FLAGS.mode, model_dir)
  logging.info('Done: %s of %r in %s', FLAGS.mode, FLAGS.experiment,
               os.path.abspath(model_dir))


def run():
  """Console-script entry point (`teams-train`)."""
  tfm_flags.define_flags()
  required = ['experiment', 'mode', 'model_dir']
  flags.register_multi_flags_validator(
      required + ['list_experiments'],
      lambda values: values['list_experiments'] or all(values[name] for name in required),
      message='--experiment, --mode and --model_dir are required (or pass --list_experiments).')
  app.run(main)


if __name__ == '__main__':
  run()
