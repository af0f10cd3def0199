"""A learning-rate schedule that follows `trainer.train_steps`, and runs that would not train.

Every registered pretraining experiment decays its learning rate to 0 at its last step
(`configs.optimization.adamw_linear_decay`). Model Garden stores that end as a number of steps
(`learning_rate.polynomial.decay_steps`), so a run given a larger `trainer.train_steps` to
continue training would go on at learning rate 0 and change nothing. `follow_train_steps` (called
by `train.py` before anything is written) moves the end of the decay to the new last step unless
the user set the schedule too, and keeps the warmup's fraction of the run unless the user set it.
`check_resumable` then refuses, in one line, a run with nothing to do: a model_dir already at
`train_steps`, or steps left only after the decay has ended.
"""

from typing import Optional

from absl import logging

# Learning-rate schedules whose decay ends at `offset + decay_steps` (Model Garden's configs).
DECAYING_SCHEDULES = ('polynomial', 'cosine')
# Warmups that last `warmup_steps` (Model Garden's configs).
WARMUPS = ('linear', 'polynomial')


def decay_config(optimizer_config):
  """The decaying schedule config of `optimizer_config`, or None for another schedule type."""
  schedule_type = optimizer_config.learning_rate.type
  if schedule_type not in DECAYING_SCHEDULES:
    return None
  return getattr(optimizer_config.learning_rate, schedule_type)


def warmup_config(optimizer_config):
  """The warmup config of `optimizer_config` when it counts steps, else None."""
  warmup_type = optimizer_config.warmup.type
  if warmup_type not in WARMUPS:
    return None
  return getattr(optimizer_config.warmup, warmup_type)


def decay_end(optimizer_config) -> Optional[int]:
  """The step at which the learning rate reaches its final value, or None if it never does."""
  schedule = decay_config(optimizer_config)
  if schedule is None or schedule.decay_steps is None:
    return None
  return schedule.offset + schedule.decay_steps


def _final_learning_rate(optimizer_config) -> float:
  schedule = decay_config(optimizer_config)
  if optimizer_config.learning_rate.type == 'polynomial':
    return schedule.end_learning_rate
  return schedule.initial_learning_rate * schedule.alpha


def follow_train_steps(params, registered) -> None:
  """Ends the decay of `params` at its `train_steps` when only `train_steps` was changed.

  Args:
    params: the run's experiment config (after --config_file and --params_override), changed in
      place.
    registered: the experiment as registered. When its schedule ends at its `train_steps`, and
      `params` changed `train_steps` but neither the schedule's `decay_steps` nor its `offset`,
      the decay of `params` is set to end at its `train_steps` and one line says so. Otherwise
      (the user set the schedule, or the experiment's schedule never ended at its last step)
      nothing changes.
  """
  schedule, default = decay_config(params.trainer.optimizer_config), decay_config(
      registered.trainer.optimizer_config)
  steps, default_steps = params.trainer.train_steps, registered.trainer.train_steps
  if (schedule is None or default is None
      or params.trainer.optimizer_config.learning_rate.type
      != registered.trainer.optimizer_config.learning_rate.type
      or steps == default_steps
      or decay_end(registered.trainer.optimizer_config) != default_steps
      or (schedule.decay_steps, schedule.offset) != (default.decay_steps, default.offset)
      or steps <= schedule.offset):
    return
  schedule.decay_steps = steps - schedule.offset
  warmup_change = ''
  warmup, default_warmup = warmup_config(params.trainer.optimizer_config), warmup_config(
      registered.trainer.optimizer_config)
  # Model Garden's warmup ramps to the decayed schedule's value at its last warmup step, so a
  # warmup as long as the run would train at learning rate 0 throughout: keep its fraction.
  if warmup is not None and default_warmup is not None and (
      warmup.warmup_steps == default_warmup.warmup_steps) and warmup.warmup_steps:
    warmup.warmup_steps = max(1, round(default_warmup.warmup_steps * steps / default_steps))
    warmup_change = (f', warmup.{params.trainer.optimizer_config.warmup.type}.warmup_steps '
                     f'{default_warmup.warmup_steps:,} -> {warmup.warmup_steps:,}')
  logging.info('trainer.train_steps=%s: the learning-rate schedule follows (learning_rate.%s.'
               'decay_steps %s -> %s%s; set them to pin the schedule).',
               f'{steps:,}', params.trainer.optimizer_config.learning_rate.type,
               f'{default.decay_steps:,}', f'{schedule.decay_steps:,}', warmup_change)


def check_resumable(params, reached_step: int) -> None:
  """Raises ValueError (one line) when training from `reached_step` would change nothing.

  Args:
    params: the run's experiment config, after `follow_train_steps` and `budgets.resolve`.
    reached_step: the step of the checkpoint the run restores; 0 for a fresh run.

  Raises:
    ValueError: `trainer.train_steps` < 1, `reached_step` >= it, or every remaining step comes
      after the end of a decay to learning rate 0.
  """
  steps = params.trainer.train_steps
  if steps < 1:
    raise ValueError(f'trainer.train_steps={steps:,} must be a positive number of steps (the '
                     'step the run ends at).')
  if reached_step >= steps:
    raise ValueError(
        f'model_dir is already at step {reached_step:,} >= trainer.train_steps={steps:,}; '
        f'nothing to do (raise trainer.train_steps to train further).')
  optimizer_config = params.trainer.optimizer_config
  end = decay_end(optimizer_config)
  if (reached_step and end is not None and reached_step >= end
      and _final_learning_rate(optimizer_config) == 0):
    schedule_type = optimizer_config.learning_rate.type
    raise ValueError(
        f'model_dir is at step {reached_step:,}, where the learning-rate decay already ended '
        f'(learning_rate.{schedule_type}.offset + decay_steps = {end:,}): steps '
        f'{reached_step + 1:,}-{steps:,} would train at learning rate 0. Leave '
        f'learning_rate.{schedule_type}.decay_steps unset to end the decay at train_steps, or '
        'set it beyond the current step.')
