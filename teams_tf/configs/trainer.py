"""Trainer config of the pretraining experiments: Model Garden's, plus compute budgets.

Objectives differ in the compute a step costs (TEAMS and ELECTRA run a generator, COCO-LM a
second view, SCRIPT two passes), so comparing them at equal steps is not comparing them at equal
compute. A run can also stop at a training-FLOP budget (known before the run: it becomes a number
of steps, and the learning-rate schedule ends there) or a wall-clock budget (checked as the run
goes). `training.budgets` implements both; this module only declares the fields.
"""

import dataclasses
from typing import Optional

from official.core import config_definitions as cfg


@dataclasses.dataclass
class PretrainTrainerConfig(cfg.TrainerConfig):
  """Model Garden's `TrainerConfig` with optional compute budgets; the first one reached stops.

  Attributes:
    max_train_minutes: wall-clock budget of this run, in minutes of training loops (the
      training steps with their summaries, logging and train actions, the first loop's tracing
      included; not start-up, evaluation or checkpoint saves). Training stops at the end of the
      first loop (`steps_per_loop`) that ends past it, saves a checkpoint and runs the final
      evaluation. A resumed run counts it from its own start. The learning-rate schedule still
      decays over `train_steps`, so the rate does not reach 0 at the stop unless `train_steps`
      is set to about where the budget ends (a schedule over time, as in Cramming, is not
      implemented). None: no limit.
    max_train_flops: training-FLOP budget of the whole run (resumed runs included), counted as
      `training.flops.FORMULA` says: the run trains min(train_steps, ⌊max_train_flops / FLOPs
      per step⌋) steps in total, and the learning-rate decay ends (reaches its end rate, 0 in
      every experiment here) at that step; warmup is unchanged. None: no limit.
  """
  max_train_minutes: Optional[float] = None
  max_train_flops: Optional[float] = None
