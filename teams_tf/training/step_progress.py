"""A progress line after every training loop: the step reached, elapsed time and ETA.

Orbit prints each loop's steps/s and metrics; a user of a long run also wants how far it is and
when it will end. The ETA extrapolates the wall-clock time per step since the first loop of this
process, evaluations included (they recur at a fixed interval), compilation excluded.
"""

import sys
import time
from typing import Callable, Optional, TextIO

from teams_tf.utils import progress


class StepProgress:
  """Orbit train action printing `train | step: N of M (P%) | elapsed H:MM:SS | ETA H:MM:SS`."""

  def __init__(self, global_step: Callable[[], int], start_step: int, train_steps: int,
               clock: Callable[[], float] = time.monotonic, stream: Optional[TextIO] = None):
    """Args:
      global_step: returns the trainer's step (e.g. `lambda: int(trainer.global_step.numpy())`).
      start_step: the step the run resumed from (0 for a new run).
      train_steps: the step the run ends at (`trainer.train_steps`).
      clock: seconds as a float; replaceable in tests.
      stream: where the line goes; default stdout, beside Orbit's own lines.
    """
    self._global_step = global_step
    self._start_step = start_step
    self._train_steps = train_steps
    self._meter = progress.ProgressMeter(interval_seconds=0, clock=clock)
    self._stream = stream or sys.stdout

  def __call__(self, output):
    del output  # Orbit's metrics; the step comes from the trainer.
    step = self._global_step()
    # The percentage is of the whole run, so a resumed run reads as far along as it is; the ETA
    # extrapolates this process's pace over the steps it trains.
    steps = self._train_steps - self._start_step
    launched = (step - self._start_step) / steps if steps > 0 else 1.0
    done = step / self._train_steps if self._train_steps > 0 else 1.0
    print(f'train | step: {step:6,} of {self._train_steps:,} ({done:.0%}) | '
          f'{self._meter.timing(launched).replace(", ", " | ")}', file=self._stream, flush=True)
