"""Tests for teams_tf.utils.progress: durations, throttling, rates and ETA with a fake clock."""

import tensorflow as tf

from teams_tf.utils import progress


class _Clock:

  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


class ProgressTest(tf.test.TestCase):

  def test_format_duration_and_bytes(self):
    self.assertEqual(progress.format_duration(0), '0:00:00')
    self.assertEqual(progress.format_duration(3 * 3600 + 7 * 60 + 5.4), '3:07:05')
    self.assertEqual(progress.format_bytes(51_022_155), '51.0 MB')

  def test_due_at_most_once_per_interval(self):
    clock = _Clock()
    meter = progress.ProgressMeter(interval_seconds=5, clock=clock)
    self.assertFalse(meter.due())
    clock.now += 5
    self.assertTrue(meter.due())
    clock.now += 4
    self.assertFalse(meter.due())
    clock.now += 1
    self.assertTrue(meter.due())

  def test_rate_and_eta(self):
    clock = _Clock()
    meter = progress.ProgressMeter(clock=clock)
    self.assertEqual(meter.rate(10), 0.0)
    clock.now += 20
    self.assertEqual(meter.rate(10), 0.5)
    self.assertEqual(meter.timing(), 'elapsed 0:00:20')
    self.assertEqual(meter.timing(0.0), 'elapsed 0:00:20')  # Nothing done yet: no estimate.
    self.assertEqual(meter.timing(0.25), 'elapsed 0:00:20, ETA estimating')
    clock.now += 10
    # 0.25 -> 0.5 in 10 s: the remaining half takes 20 s.
    self.assertEqual(meter.timing(0.5), 'elapsed 0:00:30, ETA 0:00:20')
    self.assertEqual(meter.timing(1.0), 'elapsed 0:00:30, ETA 0:00:00')

  def test_eta_ignores_a_slow_start(self):
    """A 5 s start-up before the first 30 of 20,000 bytes is not the rate of the rest."""
    clock = _Clock()
    meter = progress.ProgressMeter(clock=clock)
    clock.now += 5
    self.assertEqual(meter.timing(30 / 20_000), 'elapsed 0:00:05, ETA estimating')
    clock.now += 1
    self.assertEqual(meter.timing(10_030 / 20_000), 'elapsed 0:00:06, ETA 0:00:01')

if __name__ == '__main__':
  tf.test.main()
