"""The line after every training loop: step of steps, elapsed time, an ETA from the loops' pace."""

import io

import tensorflow as tf

from teams_tf.training import step_progress


class StepProgressTest(tf.test.TestCase):

  def _lines(self, start_step, train_steps, loops):
    """Calls the action once per (step reached, seconds on the clock) of `loops`."""
    state = {'time': 0.0}
    stream = io.StringIO()
    action = step_progress.StepProgress(lambda: state['step'], start_step, train_steps,
                                        clock=lambda: state['time'], stream=stream)
    for step, seconds in loops:
      state['step'], state['time'] = step, seconds
      action({'training_loss': 1.0})
    return stream.getvalue().splitlines()

  def test_eta_extrapolates_the_pace_since_the_first_loop(self):
    # The first loop took 30 s (compilation); then 100 steps per 10 s: 800 steps left = 80 s.
    lines = self._lines(0, 1000, [(100, 30.0), (200, 40.0)])
    self.assertEqual(['train | step:    100 of 1,000 (10%) | elapsed 0:00:30 | ETA estimating',
                      'train | step:    200 of 1,000 (20%) | elapsed 0:00:40 | ETA 0:01:20'],
                     lines)

  def test_a_resumed_run_shows_how_far_the_run_is_and_paces_the_steps_it_trains(self):
    # Resumed at 1,200 of 1,600: the percentage is of the whole run (1,400 is 88% of it), the
    # ETA this process's pace (100 steps per 10 s, 200 left).
    lines = self._lines(1200, 1600, [(1300, 5.0), (1400, 15.0), (1600, 35.0)])
    self.assertEqual('train | step:  1,400 of 1,600 (88%) | elapsed 0:00:15 | ETA 0:00:20',
                     lines[1])
    self.assertEqual('train | step:  1,600 of 1,600 (100%) | elapsed 0:00:35 | ETA 0:00:00',
                     lines[2])


if __name__ == '__main__':
  tf.test.main()
