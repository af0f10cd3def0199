"""Pretraining entry point: Model Garden's flags and `train_lib`, plus clear input errors.

  python -m teams_tf.train --experiment=teams_demo --mode=train_and_eval \
      --model_dir=/tmp/teams_demo [--params_override=...] [--gin_file=...] [--gin_params=...]
  python -m teams_tf.train --list_experiments

Training runs in Model Garden (`official.core.train_lib`) with the registered tasks; this file
parses flags, reports bad experiment names, overrides and gin bindings in one line, says what it
runs and where it writes, and adds what long runs need (`teams_tf.training`): a damaged latest
checkpoint is set aside for the previous one, a resumed run continues its input where the
checkpoint left it (and every worker of a multi-worker run resumes from the chief's checkpoint),
a non-finite loss stops the run naming the step, the loss terms and the last good checkpoint,
a run stops at its training-FLOP or wall-clock budget (`trainer.max_train_flops`,
`trainer.max_train_minutes`), and a larger `trainer.train_steps` continues a finished run with the
learning-rate decay moved to the new last step (`training.schedules`).
"""

import difflib
import os
import re
import sys
import time
import warnings

# TensorFlow's C++ start-up lines (CUDA probing, CPU features, XLA) would bury a one-line error;
# `--tf_cpp_logs` or a TF_CPP_MIN_LOG_LEVEL of the user's own keeps them.
if not any(arg in ('--tf_cpp_logs', '--tf_cpp_logs=true') for arg in sys.argv[1:]):
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
warnings.filterwarnings('ignore', message='pkg_resources is deprecated', category=UserWarning)

from absl import flags  # pylint: disable=g-import-not-at-top
from absl import logging
import gin
import tensorflow as tf
import tf_keras

from official.common import distribute_utils
from official.common import flags as tfm_flags
from official.core import exp_factory
from official.core import task_factory
from official.core import train_utils
from official.modeling import performance

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.registry import experiments
from teams_tf.tasks import init_checkpoint
from teams_tf.training import budgets
from teams_tf.training import checkpoints
from teams_tf.training import non_finite
from teams_tf.training import precision
from teams_tf.training import resume
from teams_tf.training import run_summary
from teams_tf.training import schedules
from teams_tf.training import step_progress
from teams_tf.utils import entry_points
from teams_tf.utils import hardware
from teams_tf.utils import log_filters
from teams_tf.utils import onednn

FLAGS = flags.FLAGS
# Model Garden's flags a user needs, shown by --help beside this file's own.
_KEY_FLAGS = ('experiment', 'mode', 'model_dir', 'config_file', 'params_override', 'gin_file',
              'gin_params', 'tpu')
# The modes Model Garden's `--mode` accepts that its OrbitExperimentRunner implements.
_MODES = ('train', 'eval', 'train_and_eval', 'train_and_post_eval', 'continuous_eval')
_LIST_EXPERIMENTS = flags.DEFINE_bool(
    'list_experiments', False, 'Print every registered experiment with a one-line description '
    'and exit.')
_SEED = flags.DEFINE_integer(
    'seed', None, 'Seeds Python, NumPy and TensorFlow before the model is built, so weight '
    'initialization and the sampling seeds repeat (the input pipeline has its own '
    'task.train_data.seed).')
flags.DEFINE_bool(  # Read from sys.argv above, before TensorFlow loads.
    'tf_cpp_logs', False, "Shows TensorFlow's C++ start-up logging (hidden by default with "
    'TF_CPP_MIN_LOG_LEVEL=3 unless that variable is set).')
_LOG_PARAMS = flags.DEFINE_bool(
    'log_params', False, 'Logs the full experiment config before the run (it is always written '
    'to params.yaml in --model_dir).')
_OP_DETERMINISM = flags.DEFINE_bool(
    'op_determinism', False, 'Makes every TensorFlow op deterministic '
    '(tf.config.experimental.enable_op_determinism; needs --seed) and turns off the oneDNN CPU '
    'kernels, which are not: with it, a resumed run ends with the same weights as an '
    'uninterrupted one. Some ops get slower.')


def _fail(message):
  """Exits with a one-line error instead of a stack trace.

  Gin appends where an error passed through a configurable ("In call to configurable 'Trainer'")
  as a second line; the error itself is the first.
  """
  sys.exit(f'error: {message.split(chr(10) + "  In call to configurable")[0]}')


def _parse_gin():
  try:
    gin.parse_config_files_and_bindings(FLAGS.gin_file, FLAGS.gin_params)
  except (IOError, ValueError, SyntaxError) as e:
    _fail(f'bad gin configuration ({FLAGS.gin_file or ""} {FLAGS.gin_params or ""}): '
          f'{" ".join(str(e).split())}')
  if FLAGS.gin_file or FLAGS.gin_params:
    logging.info('gin bindings:\n%s', gin.config_str())


def _parse_params():
  """(run's config from --experiment, --config_file and --params_override; registered config)."""
  try:
    registered = exp_factory.get_exp_config(FLAGS.experiment)
  except LookupError:
    close = difflib.get_close_matches(FLAGS.experiment, experiments.experiment_names(), n=3)
    guess = f'; did you mean {" or ".join(repr(name) for name in close)}?' if close else ''
    _fail(f'unknown experiment {FLAGS.experiment!r}{guess} (--list_experiments lists all)')
  try:
    return (train_utils.parse_configuration(FLAGS, print_return=_LOG_PARAMS.value),
            registered)
  # Model Garden reads a --params_override it cannot parse as key=value pairs as a YAML path,
  # hence NotFoundError (e.g. for an unquoted glob with brackets).
  except (KeyError, ValueError, AttributeError, TypeError, tf.errors.NotFoundError) as e:
    hint = _close_keys(FLAGS.params_override, registered.as_dict())
    if re.search(r'input_path=[^,\'"]*,', FLAGS.params_override or ''):
      hint = (" (its commas separate overrides: quote a list of files, "
              "task.train_data.input_path='a.txt,b.txt', or use a glob)")
    _fail(f'bad --config_file/--params_override for {FLAGS.experiment!r}: '
          f'{" ".join(str(e).split())}{hint}')


def _dotted_keys(values, prefix=''):
  """Every leaf field of a config dict as a dotted key ('trainer.train_steps', ...)."""
  for key, value in values.items():
    if isinstance(value, dict) and value:
      yield from _dotted_keys(value, f'{prefix}{key}.')
    else:
      yield f'{prefix}{key}'


def _close_keys(params_override, values):
  """'; did you mean ...?' for the override keys that are not fields of the experiment."""
  known = list(_dotted_keys(values))
  given = re.findall(r'(?:^|,)\s*([A-Za-z_][\w.]*)\s*=', params_override or '')
  guesses = [f'{key} -> {" or ".join(close)}' for key in given if key not in known
             if (close := difflib.get_close_matches(key, known, n=2, cutoff=0.8))]
  return f'; did you mean {"; ".join(guesses)}?' if guesses else ''


def _mistyped_fields(value, default, key=''):
  """(key, value, expected type) of each field whose number or bool default got another kind.

  YAML keeps an override it cannot read as a number (`trainer.train_steps=abc`) a string, which
  Model Garden stores as it is; unset (None) defaults say nothing about the type and are skipped.
  """
  if isinstance(default, dict) and isinstance(value, dict):
    for name, field in value.items():
      if name in default:
        yield from _mistyped_fields(field, default[name], f'{key}.{name}' if key else name)
  elif value is None:  # Optional fields; Model Garden checks what it needs set.
    return
  elif isinstance(default, bool):
    if not isinstance(value, bool):
      yield key, value, 'true or false'
  elif isinstance(default, (int, float)) and (
      isinstance(value, bool) or not isinstance(value, (int, float))):
    yield key, value, 'an integer' if isinstance(default, int) else 'a number'


def _check_field_types(params, registered):
  """One-line error for a config field given a value of the wrong kind, before anything runs."""
  for key, value, expected in _mistyped_fields(params.as_dict(), registered.as_dict()):
    _fail(f'{key}={value!r} must be {expected} (--params_override/--config_file for '
          f'{FLAGS.experiment!r}).')


def _strategy(params):
  """Model Garden's strategy for `params.runtime`; a one-line error when it cannot be created."""
  runtime = params.runtime
  try:
    return distribute_utils.get_distribution_strategy(
        distribution_strategy=runtime.distribution_strategy,
        all_reduce_alg=runtime.all_reduce_alg,
        num_gpus=runtime.num_gpus,
        tpu_address=runtime.tpu)
  except (ValueError, RuntimeError, tf.errors.OpError) as e:
    hint = ''
    if runtime.distribution_strategy == 'tpu':
      hint = (' Pass --tpu=<TPU name> (or --tpu=local on a TPU VM), or run on CPU/GPU with '
              '--params_override=runtime.distribution_strategy=mirrored.')
    _fail(f'cannot create the {runtime.distribution_strategy!r} distribution strategy '
          f'(runtime.distribution_strategy): {" ".join(str(e).split()).rstrip(".")}.{hint}')


def _choose_precision(params):
  """Trains in float32 where the experiment's bfloat16 would be slower (`training/precision`)."""
  named = [FLAGS.params_override or '']
  for path in FLAGS.config_file or []:
    with tf.io.gfile.GFile(path) as f:
      named.append(f.read())
  dtype, why = precision.choose(
      params.runtime.mixed_precision_dtype,
      set_by_user=any('mixed_precision_dtype' in text for text in named),
      has_accelerator=precision.has_accelerator(params.runtime.distribution_strategy),
      cpu_flags=hardware.cpuinfo().get('flags', '').split())
  params.runtime.mixed_precision_dtype = dtype
  logging.info('Precision: %s.', why)


def _training_shapes(params):
  """What sets the cost of a step: batch, sequence length, predictions, precision, steps."""
  data = params.task.train_data
  shapes = [f'batch {data.global_batch_size}', f'T {data.seq_length}']
  if getattr(data, 'max_predictions_per_seq', None):  # Pretraining data.
    shapes.append(f'{data.max_predictions_per_seq} predictions per sequence')
  shapes.append(params.runtime.mixed_precision_dtype or 'float32')
  shapes.append(f'{params.trainer.train_steps:,} steps')
  return ', '.join(shapes)


def _list_experiments():
  names = experiments.experiment_names()
  width = max(len(name) for name in names)
  for name in names:
    print(f'{name:{width}}  {experiments.describe(name)}')


def main(_):
  # Orbit prints each progress and metrics block and logs it too; keep one copy, on stdout, line
  # by line so that a log file of a killed run still ends at its last step.
  started = time.monotonic()
  sys.stdout.reconfigure(line_buffering=True)
  log_filters.install()
  if _LIST_EXPERIMENTS.value:
    _list_experiments()
    return
  if FLAGS.mode not in _MODES:
    _fail(f'--mode={FLAGS.mode} is not implemented by Model Garden\'s experiment runner; use one '
          f'of {", ".join(_MODES)}.')
  if _OP_DETERMINISM.value and _SEED.value is None:
    _fail('--op_determinism needs --seed=N (random ops must have seeds to be deterministic).')
  if _OP_DETERMINISM.value and os.environ.get('TF_ENABLE_ONEDNN_OPTS') != '0':
    _fail('--op_determinism needs the oneDNN CPU kernels off, and TensorFlow loaded with '
          f'TF_ENABLE_ONEDNN_OPTS={os.environ.get("TF_ENABLE_ONEDNN_OPTS")}: unset it or set it '
          'to 0.')
  try:
    is_file = tf.io.gfile.exists(FLAGS.model_dir) and not tf.io.gfile.isdir(FLAGS.model_dir)
  except tf.errors.OpError as e:  # A gs:// path without network or credentials.
    _fail(f'--model_dir={FLAGS.model_dir} cannot be reached ({e.message.splitlines()[0]}): check '
          'the network and credentials for cloud paths, or pass a local directory.')
  if is_file:
    _fail(f'--model_dir={FLAGS.model_dir} is a file, not a directory: pass a new directory or '
          'the one of the run to continue.')
  _parse_gin()
  params, registered = _parse_params()
  _check_field_types(params, registered)
  schedules.follow_train_steps(params, registered)
  try:
    budgets.resolve(params)  # A FLOP budget becomes train_steps before params.yaml is written.
  except ValueError as e:
    _fail(str(e))
  model_dir = FLAGS.model_dir
  _choose_precision(params)
  logging.info('oneDNN CPU kernels: %s.', onednn.describe())
  if params.runtime.mixed_precision_dtype:
    performance.set_mixed_precision_policy(params.runtime.mixed_precision_dtype)
  if _SEED.value is not None:
    tf_keras.utils.set_random_seed(_SEED.value)
  if _OP_DETERMINISM.value:
    tf.config.experimental.enable_op_determinism()
  strategy = _strategy(params)
  # The chief writes; other workers of a multi-worker run would write the same files again.
  chief = strategy.extended.should_checkpoint
  try:
    # Every worker picks the same checkpoint; only the chief moves damaged ones aside.
    latest = checkpoints.latest_restorable(model_dir, set_aside='train' in FLAGS.mode and chief)
    if 'train' in FLAGS.mode:
      schedules.check_resumable(params, checkpoints.global_step(latest))
  except (ValueError, RuntimeError) as e:
    _fail(str(e))
  try:
    with strategy.scope():
      task = task_factory.get_task(params.task, logging_dir=model_dir)
      trainer = resume.build_trainer(params, task, FLAGS.mode, model_dir,
                                     checkpoints.global_step(latest))
  except (ValueError, RuntimeError) as e:
    _fail(str(e))
  # Written once the run has been checked and built: a run that fails to start leaves nothing.
  if 'train' in FLAGS.mode and chief:
    train_utils.serialize_config(params, model_dir)
  logging.info('Running %s of %r on %d replica(s) (%s); checkpoints, TensorBoard summaries and '
               'params.yaml in %s', FLAGS.mode, FLAGS.experiment,
               strategy.num_replicas_in_sync, _training_shapes(params),
               os.path.abspath(model_dir))
  try:
    resume.ExperimentRunner(
        # Every worker resumes its input at the step of `latest` (build_trainer above); a
        # non-chief worker also restores `latest` itself (see resume.ExperimentRunner).
        chief_checkpoint=None if chief else latest,
        distribution_strategy=strategy,
        task=task,
        mode=FLAGS.mode,
        params=params,
        model_dir=model_dir,
        save_summary=chief,
        trainer=trainer,
        train_actions=[
            non_finite.NonFiniteLossCheck(
                # Fine-tuning tasks are Model Garden's and report one loss.
                model_dir, getattr(task, 'loss_weights', dict)(),
                params.trainer.recovery_max_trials),
            step_progress.StepProgress(lambda: int(trainer.global_step.numpy()),
                                       checkpoints.global_step(latest),
                                       params.trainer.train_steps)]
    ).run()
  except (non_finite.NonFiniteLossError, init_checkpoint.InitCheckpointError) as e:
    _fail(str(e))
  except tf.errors.OutOfRangeError:
    # The training input repeats, so it runs dry only when it yields less than one batch.
    data = params.task.train_data
    _fail(f'the training input ran out of batches: task.train_data.input_path='
          f'{data.input_path!r} yields less than one batch of {data.global_batch_size}; add data '
          'or lower task.train_data.global_batch_size.')
  if chief:
    train_utils.save_gin_config(FLAGS.mode, model_dir)
  try:
    size = experiments.split_name(FLAGS.experiment)[1]
  except ValueError:  # A fine-tuning experiment.
    size = None
  print(run_summary.closing_summary(model_dir, FLAGS.experiment, FLAGS.mode, params.task.model,
                                    size, seconds=time.monotonic() - started), flush=True)


def define_flags():
  """Model Garden's training flags, the ones --help lists, and the check of the required ones."""
  tfm_flags.define_flags()
  for name in _KEY_FLAGS:
    flags.declare_key_flag(name)
  required = ['experiment', 'mode', 'model_dir']
  flags.register_multi_flags_validator(
      required + ['list_experiments'],
      lambda values: values['list_experiments'] or all(values[name] for name in required),
      message='--experiment, --mode and --model_dir are required (or pass --list_experiments).')


def run():
  """Console-script entry point (`teams-train`)."""
  define_flags()
  entry_points.run(main, sys.modules[__name__])


if __name__ == '__main__':
  run()
