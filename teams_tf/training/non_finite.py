"""Stopping (or rolling back) a run whose loss became NaN or infinite, saying where and why.

A leaf module like `losses/`: the metric is updated by `tasks.pretrain_base.PretrainTask`, the
action is installed by `train.py`.

Model Garden checks the mean loss of each training loop and, with `trainer.recovery_max_trials` = 0
(the default), raises 'The loss value is NaN after training loop'. `NonFiniteLossCheck` runs before
that check and replaces its message with what a user needs: the first step whose loss was not
finite, each loss term over the loop (which term diverged), and the last good checkpoint, which
stays intact because Orbit saves only after the train actions have run. With
`trainer.recovery_max_trials` = N > 0, Model Garden instead restores the latest checkpoint (weights,
optimizer, step, sampling seeds) up to N times while the input iterator keeps going, so the batches
fed since that checkpoint are skipped; this action then logs what is skipped.
"""

import math

from absl import logging
import tensorflow as tf
import tf_keras


class NonFiniteLossError(RuntimeError):
  """The training loss became NaN or infinite and no rollback is configured or left."""


class FirstNonFiniteStep(tf_keras.metrics.Metric):
  """The first step since the last reset whose loss was NaN or infinite on any replica; 0 if none.

  Reported after every training loop as `first_non_finite_step` (0 in a healthy run).
  """

  def __init__(self, name='first_non_finite_step'):
    super().__init__(name=name, dtype=tf.float32)
    self.step = self.add_weight(
        'step', initializer='zeros', aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def update_state(self, loss, step):
    """Records `step` (the 1-based number of the step that produced `loss`) if it is the first."""
    bad = tf.cast(tf.logical_not(tf.math.is_finite(loss)), tf.float32)
    # A NaN on one replica only reaches the others' loss one step later, through the weights.
    bad = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, bad)
    first = tf.logical_and(bad > 0, tf.equal(self.step, 0.0))
    self.step.assign(tf.where(first, tf.cast(step, tf.float32), self.step))

  def result(self):
    return tf.identity(self.step)


class NonFiniteLossCheck:
  """Orbit train action: a one-line error, or a logged rollback, when the loop's loss is not finite.

  Install it before Model Garden's own recovery action (`train_lib.run_experiment(train_actions=
  [...])` puts the given actions first). It counts non-finite loops like Model Garden's
  `RecoveryCondition` and raises `NonFiniteLossError` when Model Garden would raise, or when there
  is no checkpoint to roll back to (Model Garden would then go on with the diverged weights).
  """

  def __init__(self, model_dir: str, loss_names, recovery_max_trials: int):
    """Args: the run's model_dir, the task's loss-term names, `trainer.recovery_max_trials`."""
    self._model_dir = model_dir
    self._loss_names = tuple(loss_names)
    self._max_trials = recovery_max_trials
    self._count = 0

  def __call__(self, output):
    loss = float(output['training_loss'])
    if math.isfinite(loss):
      return
    self._count += 1
    step = int(output.get('first_non_finite_step', 0))
    where = f'at step {step}' if step else 'in the last training loop'
    terms = ', '.join(f'{name}={float(output[name]):.4g}' for name in self._loss_names
                      if name in output)
    what = (f'training loss {loss} {where} (mean of each loss term over the loop: '
            f'{terms or "not reported"})')
    latest = tf.train.latest_checkpoint(self._model_dir)
    if latest is None:
      raise NonFiniteLossError(
          f'{what}; no checkpoint was written yet, so there is nothing to resume or roll back to. '
          'Lower the learning rate (task and optimizer settings are in params.yaml) and rerun.')
    if self._count > max(self._max_trials, 0):
      raise NonFiniteLossError(
          f'{what}. The last good checkpoint, {latest}, is intact: the weights after the loss '
          'diverged were not saved. Rerun to resume from it with a lower learning rate, or set '
          'trainer.recovery_max_trials=N to roll back to it and skip the batches that diverged '
          f'(used {self._count - 1} of {self._max_trials}).')
    logging.warning('%s; rolling back to %s and skipping the batches fed since (recovery %d of '
                    'trainer.recovery_max_trials=%d).', what, latest, self._count, self._max_trials)
