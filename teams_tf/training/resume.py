"""Resuming a run: the input where the checkpoint left it; every worker from one checkpoint.

Model Garden builds the training input afresh on every start, so a run restarted after preemption
would read its corpus from the beginning again: the first batches would be seen once per restart
and the run would differ from an uninterrupted one. Every input pipeline here is a deterministic
function of its seed and pipeline id (`data.pretrain_dataloader`: seeded shuffle, stateless masks
per example index), and each step takes one batch per replica from it, so resuming at step s skips
s × (replicas per pipeline) batches. Skipping reads the skipped data (tf.data has no random access
into text or TFRecords): it costs the input pipeline's time for those batches, not the model's.

`ExperimentRunner` is Model Garden's runner with one fix for multi-worker runs: every worker,
not only the chief, resumes from the chief's latest checkpoint; it also stops a run at its
wall-clock budget (`training.budgets`).
"""

import contextlib
import functools
import logging as logging_lib
from typing import Optional

from absl import logging
import orbit
import tensorflow as tf
import tf_keras

from official.core import base_trainer
from official.core import train_lib
from official.core import train_utils

from teams_tf.training import budgets
from teams_tf.training import checkpoints


def _inputs_after(task, params, steps, input_context=None):
  """`task.build_inputs` without the batches of the first `steps` steps."""
  batches_per_step = 1
  if input_context is not None:
    batches_per_step = input_context.num_replicas_in_sync // input_context.num_input_pipelines
  return task.build_inputs(params, input_context).skip(steps * batches_per_step)


def create_optimizer_variables(optimizer, variables) -> bool:
  """Creates a legacy Keras `optimizer`'s step counter, hyperparameters and slots for `variables`.

  A `tf.function` that creates variables on its first call is traced twice; the first training
  step would create the optimizer's (Model Garden's optimizers are legacy Keras ones, which create
  them in `apply_gradients`), so it would be traced twice: 2.3 s more for teams_demo on 2 cores.
  A legacy optimizer creates slots for variables it has not seen in a later step too, so
  `variables` may be part of the model's.

  Returns:
    Whether they were created: False for a new-style Keras optimizer, whose `build` must see every
    variable at once (a model whose layers build on their first call may not have them yet).
  """
  if isinstance(optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
    optimizer = optimizer.inner_optimizer  # The loss scale is created with the wrapper.
  if not isinstance(optimizer, tf_keras.optimizers.legacy.Optimizer):
    return False
  # The legacy optimizer's creation of its variables has no public name.
  optimizer._create_all_weights(variables)  # pylint: disable=protected-access
  return True


def build_trainer(params, task, mode: str, model_dir: str, start_step: int):
  """Model Garden's `base_trainer.Trainer` for `mode`, its training input resumed at `start_step`.

  Call it in the strategy's scope. `start_step` is the step of the checkpoint the run will restore
  (`checkpoints.global_step(checkpoints.latest_restorable(model_dir))`); 0 for a fresh run. When
  training, the optimizer's variables are created before the first step
  (`create_optimizer_variables`) if the model's already exist.
  """
  train = 'train' in mode
  model = task.build_model()
  optimizer = train_utils.create_optimizer(task, params)
  if train:
    create_optimizer_variables(optimizer, model.trainable_variables)
  train_dataset = None
  if train and start_step:
    logging.info('Resuming at step %d: the training input skips the batches those steps used.',
                 start_step)
    train_dataset = orbit.utils.make_distributed_dataset(
        tf.distribute.get_strategy(), _inputs_after, task, params.task.train_data, start_step)
  return base_trainer.Trainer(
      params,
      task,
      model=model,
      optimizer=optimizer,
      train=train,
      evaluate='eval' in mode,
      train_dataset=train_dataset,
      checkpoint_exporter=train_utils.maybe_create_best_ckpt_exporter(params, model_dir))


class _DropFlopProfilerFailure(logging_lib.Filter):

  def filter(self, record):
    return not record.getMessage().startswith(_FLOP_PROFILER_FAILURE)


# Model Garden's `run` ends by profiling the model's FLOPs, which needs a functional Keras model
# (`model.inputs`); the pretraining models here are subclassed, so it always logs this as an
# error. Their FLOPs are counted analytically instead (`training.experiment_flops`).
_FLOP_PROFILER_FAILURE = 'Failed to count model FLOPs'


@contextlib.contextmanager
def _without_flop_profiler_failure():
  drop = _DropFlopProfilerFailure()
  logging.get_absl_logger().addFilter(drop)
  try:
    yield
  finally:
    logging.get_absl_logger().removeFilter(drop)


class ExperimentRunner(train_lib.OrbitExperimentRunner):
  """Model Garden's runner, in which a non-chief worker resumes from the chief's checkpoint.

  Model Garden gives a non-chief worker a CheckpointManager on a new `tempfile.mkdtemp()` (a save
  may read variables that synchronize across workers, so every worker saves, but only the chief
  into model_dir). In a restarted run that directory is empty, so the worker would call `init_fn`
  and start from a new initialization at step 0 while the chief restores model_dir's latest
  checkpoint. Restoring creates the optimizer slots, and MultiWorkerMirroredStrategy broadcasts
  each new variable from the chief, so the workers' collectives disagree and the run fails (were
  it to go on, the workers' weights and step counts would differ). Here that worker's `init_fn`
  restores the chief's checkpoint instead: it runs exactly where the chief restores (the
  manager's `restore_or_initialize`), so both create the same variables in the same order, and the
  worker counts its checkpoint interval from the restored step, as the chief's manager does.

  With `trainer.max_train_minutes` set, training runs under `budgets.WallClockController`; when it
  reports the budget spent, `run` saves a checkpoint at that step and then evaluates if the mode
  would have evaluated at the end of training (train_and_eval, train_and_post_eval).
  """

  def __init__(self, *, chief_checkpoint: Optional[str], **kwargs):
    """`chief_checkpoint`: on a non-chief worker, the checkpoint the chief resumes from; else None.

    The other arguments are `train_lib.OrbitExperimentRunner`'s; `params` must have been through
    `budgets.resolve`.
    """
    self._chief_checkpoint = chief_checkpoint
    trainer_config = kwargs['params'].trainer
    max_train_minutes = getattr(trainer_config, 'max_train_minutes', None)
    if max_train_minutes is not None:
      kwargs['controller_cls'] = functools.partial(
          budgets.WallClockController, max_train_minutes=max_train_minutes,
          train_steps=trainer_config.train_steps)
    self._final_evaluation = kwargs['mode'] in ('train_and_eval', 'train_and_post_eval') or (
        kwargs.get('run_post_eval', False))
    super().__init__(**kwargs)

  def run(self):
    """Model Garden's `run`; at a wall-clock stop, a checkpoint and the final evaluation."""
    try:
      with _without_flop_profiler_failure():
        return super().run()
    except budgets.WallClockBudgetReached as stop:
      logging.info('%s; stopping: saving a checkpoint%s.', stop,
                   ' and running the final evaluation' if self._final_evaluation else '')
      with self.strategy.scope():
        self.controller.save_checkpoint()
        if not self._final_evaluation:
          return self.trainer.model, {}
        return self.trainer.model, self.controller.evaluate(
            steps=self.params.trainer.validation_steps)

  def _maybe_build_checkpoint_manager(self):
    manager = super()._maybe_build_checkpoint_manager()
    if manager is None or self._chief_checkpoint is None:
      return manager
    return tf.train.CheckpointManager(
        manager.checkpoint,
        directory=manager.directory,  # Model Garden's mkdtemp(); it holds no checkpoint.
        max_to_keep=1,  # As Model Garden's for non-chief workers.
        step_counter=self.trainer.global_step,
        checkpoint_interval=manager.checkpoint_interval,
        init_fn=functools.partial(manager.checkpoint.restore, self._chief_checkpoint),
        last_checkpoint_step=checkpoints.global_step(self._chief_checkpoint))
