"""Compute budgets of a pretraining run: stop at a training-FLOP budget or a wall-clock budget.

Objectives are compared at equal compute by giving their runs the same budget
(`configs.trainer.PretrainTrainerConfig`: `trainer.max_train_flops`, `trainer.max_train_minutes`).

A FLOP budget is known before the run starts: `resolve` (called by `train.py` before anything is
written) turns it into steps, ⌊max_train_flops / FLOPs per step⌋ with the FLOPs of one step
counted analytically at the training shapes (`training.experiment_flops`), and if that is fewer
than `trainer.train_steps` it becomes the run's `train_steps` and the learning-rate decay is set
to end there; warmup is unchanged. It is a budget in total steps, so a resumed run stops at the
same step as an uninterrupted one.

A wall-clock budget cannot be turned into steps up front. `WallClockController` (Orbit's
controller, installed by `resume.ExperimentRunner`) adds up the time of the training loops and,
at the end of the first loop that ends past the budget, raises `WallClockBudgetReached`; the
runner then saves a checkpoint at that step and runs the final evaluation, as the end of
training would. Each run counts the budget from its own start: a resumed run gets the whole
budget again. The learning-rate schedule still decays over `train_steps`, so it does not reach 0
at a wall-clock stop unless `train_steps` is set to about the step the budget ends at; schedules
over time (Cramming's) are not implemented.
"""

import math
import time
from typing import Optional

from absl import logging
import orbit
import tensorflow as tf

from teams_tf.training import experiment_flops
from teams_tf.training import schedules


class WallClockBudgetReached(Exception):
  """The run spent `trainer.max_train_minutes` in training loops; the message says at which step."""


def _budget(trainer_config, field, unit) -> Optional[float]:
  """`trainer.<field>` as a float > 0, or None when unset; ValueError naming the field."""
  value = getattr(trainer_config, field, None)  # Fine-tuning experiments have no budgets.
  if value is None:
    return None
  # YAML reads 1.5e12 (no sign in the exponent) as a string.
  try:
    number = float(value) if not isinstance(value, bool) else math.nan
  except (TypeError, ValueError):
    number = math.nan
  if not number > 0:  # Also NaN and non-numbers.
    raise ValueError(f'trainer.{field}={value!r} must be a number > 0 ({unit}); leave it unset '
                     '(null) for no limit.')
  setattr(trainer_config, field, number)
  return number


def _sci(value):
  """`value` to 3 significant digits in scientific notation, as 1.2e15 or 2.85e11."""
  mantissa, exponent = f'{value:.2e}'.split('e')
  return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _end_schedule_at(optimizer_config, steps):
  """Sets the learning-rate decay of `optimizer_config` to end at step `steps`.

  Returns:
    What changed, for the log line.

  Raises:
    ValueError: a schedule that does not end at a step, or a budget within the warmup.
  """
  warmup_type = optimizer_config.warmup.type
  warmup = schedules.warmup_config(optimizer_config)
  warmup_steps = warmup.warmup_steps if warmup is not None else 0
  if steps <= warmup_steps:
    raise ValueError(
        f'trainer.max_train_flops allows {steps:,} steps, no more than the '
        f'{warmup_steps:,} warmup steps (the learning rate would never leave warmup): raise the '
        f'budget or lower trainer.optimizer_config.warmup.{warmup_type}.warmup_steps.')
  schedule_type = optimizer_config.learning_rate.type
  schedule = schedules.decay_config(optimizer_config)
  if schedule is None:
    raise ValueError(
        'trainer.max_train_flops ends the learning-rate decay at the budget, which needs '
        f'trainer.optimizer_config.learning_rate.type in {schedules.DECAYING_SCHEDULES}, not '
        f'{schedule_type!r}.')
  if steps <= schedule.offset:
    raise ValueError(f'trainer.max_train_flops allows {steps:,} steps, no more than the '
                     f'schedule offset {schedule.offset:,}: the decay would never start.')
  before = schedule.decay_steps
  schedule.decay_steps = steps - schedule.offset
  return f'learning_rate.{schedule_type}.decay_steps {before:,} -> {schedule.decay_steps:,}'


def steps_in_budget(max_train_flops: float, flops_per_step: float) -> int:
  """The whole training steps a FLOP budget allows (where `resolve` stops a run)."""
  return math.floor(max_train_flops / flops_per_step)


def resolve(params) -> None:
  """Checks the budgets of `params.trainer` and turns a FLOP budget into steps, in place.

  Call it on the parsed experiment before anything is written. With `trainer.max_train_flops`
  set, logs one line with the budget, the steps it allows and the FLOPs of a step; when those are
  at most `trainer.train_steps`, sets `train_steps` to them and ends the learning-rate decay
  there (so resolving again changes nothing). Experiments whose trainer config has no budget
  fields (fine-tuning) are left unchanged.

  Raises:
    ValueError: a budget that is not a number > 0, a FLOP budget of less than one step or
      within the warmup, or a schedule that does not decay over a number of steps; the message
      names the field.
  """
  trainer = params.trainer
  _budget(trainer, 'max_train_minutes', 'wall-clock minutes of training')
  max_flops = _budget(trainer, 'max_train_flops', 'training FLOPs of the whole run')
  if max_flops is None:
    return
  flops_per_step = experiment_flops.step_flops(params)
  steps = steps_in_budget(max_flops, flops_per_step)
  what = f'FLOP budget {_sci(max_flops)} = {steps:,} steps of {_sci(flops_per_step)} FLOPs'
  if steps < 1:
    raise ValueError(f'trainer.max_train_flops={_sci(max_flops)} is less than one training step '
                     f'({_sci(flops_per_step)} FLOPs at the training shapes).')
  if steps > trainer.train_steps:
    logging.info('%s, more than trainer.train_steps=%s: the budget does not shorten the run.',
                 what, f'{trainer.train_steps:,}')
    return
  schedule = _end_schedule_at(trainer.optimizer_config, steps)
  logging.info('%s; training stops and the schedule ends there (trainer.train_steps %s -> %s, %s).',
               what, f'{trainer.train_steps:,}', f'{steps:,}', schedule)
  trainer.train_steps = steps


def _on_any_replica(strategy):
  """A function of a Python bool: whether it is True on any replica (every worker agrees).

  Each worker measures its own time; without agreement one worker could stop while the others
  wait in the next step's all-reduce.
  """
  if strategy.num_replicas_in_sync == 1:
    return bool

  @tf.function
  def count(flag):
    # tf.identity puts each replica's copy on its own device, which the all-reduce reads from.
    total = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce(
        tf.distribute.ReduceOp.SUM, tf.identity(flag)))
    return strategy.experimental_local_results(total)[0]

  return lambda flag: float(count(tf.constant(float(flag)))) > 0


class WallClockController(orbit.Controller):
  """Orbit's controller, stopping training at the end of the loop that ends past a time budget.

  The time counted is the sum over this process's training loops (`_train_n_steps`: the steps,
  their train actions, summaries and log line; the first loop's tracing included): not start-up,
  restoring, evaluation or checkpoint saves. The stop is a `WallClockBudgetReached`
  raised after the loop has been reported and before its checkpoint; the caller saves the
  checkpoint and evaluates (`resume.ExperimentRunner.run`). No stop is raised at or after
  `train_steps`, where training ends anyway.
  """

  def __init__(self, *, max_train_minutes: float, train_steps: int, **kwargs):
    """`max_train_minutes` > 0; `train_steps` the run's last step; the rest Orbit's arguments."""
    super().__init__(**kwargs)
    self._max_train_minutes = max_train_minutes
    self._train_steps = train_steps
    self._train_seconds = 0.0
    self._on_any_replica = _on_any_replica(self.strategy)

  def _train_n_steps(self, num_steps: int):
    start = time.monotonic()
    super()._train_n_steps(num_steps)
    self._train_seconds += time.monotonic() - start
    step = int(self.global_step.numpy())
    if step >= self._train_steps:
      return
    if self._on_any_replica(self._train_seconds >= 60 * self._max_train_minutes):
      raise WallClockBudgetReached(
          f'wall-clock budget of {self._max_train_minutes:g} min (trainer.max_train_minutes) '
          f'reached at step {step:,} ({self._train_seconds / 60:.2f} min in training loops)')
