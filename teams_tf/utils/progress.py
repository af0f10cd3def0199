"""Progress lines for the long-running data tools: throughput, elapsed time and ETA, throttled."""

import time
from typing import Callable, Optional


def format_duration(seconds: float) -> str:
  """`H:MM:SS` for a non-negative number of seconds."""
  seconds = int(round(seconds))
  return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


def format_bytes(num_bytes: float) -> str:
  """Bytes in MB with one decimal (decimal megabytes, as `ls -h --si`)."""
  return f'{num_bytes / 1e6:,.1f} MB'


class ProgressMeter:
  """Decides when to print a progress line and formats its rate, elapsed time and ETA.

  Usage: call `due()` as work advances and, when it returns True (at most once per
  `interval_seconds`), print a line built with `rate()` and `timing()`.
  """

  def __init__(self, interval_seconds: float = 5.0, clock: Callable[[], float] = time.monotonic):
    """Starts the clock.

    Args:
      interval_seconds: minimum time between two progress lines.
      clock: seconds as a float; replaceable in tests.
    """
    self._interval = interval_seconds
    self._clock = clock
    self._start = clock()
    self._last_report = self._start
    self._first_estimate = None  # (time, fraction done) at the first `timing(fraction)` call.

  def elapsed(self) -> float:
    """Seconds since the meter was created."""
    return self._clock() - self._start

  def due(self) -> bool:
    """True when `interval_seconds` have passed since the last time it returned True."""
    now = self._clock()
    if now - self._last_report < self._interval:
      return False
    self._last_report = now
    return True

  def rate(self, count: float) -> float:
    """`count` per second of elapsed time (0 before any time has passed)."""
    elapsed = self.elapsed()
    return count / elapsed if elapsed > 0 else 0.0

  def timing(self, fraction_done: Optional[float] = None) -> str:
    """`elapsed H:MM:SS`, plus `, ETA H:MM:SS` when the done fraction of the work is known.

    The ETA extrapolates the rate since the first call that reported a fraction, not since
    start-up: worker processes, imports and the first read cost seconds that do not recur, and
    on a small input they are most of the elapsed time (a 20 KB file read 30 bytes into a 5 s
    start-up would otherwise estimate an hour). The first such call has no rate yet and says
    `ETA estimating`.
    """
    now = self._clock()
    text = f'elapsed {format_duration(now - self._start)}'
    if fraction_done is None or not 0 < fraction_done <= 1:
      return text
    if fraction_done == 1:
      return text + f', ETA {format_duration(0)}'
    if self._first_estimate is None:
      self._first_estimate = (now, fraction_done)
      return text + ', ETA estimating'
    first_time, first_fraction = self._first_estimate
    if fraction_done <= first_fraction or now <= first_time:
      return text + ', ETA estimating'
    seconds_per_fraction = (now - first_time) / (fraction_done - first_fraction)
    return text + f', ETA {format_duration(seconds_per_fraction * (1 - fraction_done))}'
