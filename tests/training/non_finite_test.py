"""A non-finite loss names its first step, the loss terms and the last good checkpoint."""

import os

import numpy as np
import tensorflow as tf

from teams_tf.training import non_finite


def _loop_output(loss, step=0, **terms):
  return dict(training_loss=np.float32(loss), first_non_finite_step=np.float32(step),
              learning_rate=np.float32(1e-3), **{k: np.float32(v) for k, v in terms.items()})


class FirstNonFiniteStepTest(tf.test.TestCase):

  def test_records_only_the_first_non_finite_step(self):
    metric = non_finite.FirstNonFiniteStep()
    for step, loss in [(11, 2.0), (12, 1.5), (13, np.nan), (14, np.inf), (15, 1.0)]:
      metric.update_state(tf.constant(loss), tf.constant(step, tf.int64))
    self.assertEqual(13.0, float(metric.result()))
    metric.reset_state()
    metric.update_state(tf.constant(-np.inf), tf.constant(16, tf.int64))
    self.assertEqual(16.0, float(metric.result()))

  def test_zero_while_finite(self):
    metric = non_finite.FirstNonFiniteStep()
    metric.update_state(tf.constant(1e30), tf.constant(3, tf.int64))
    self.assertEqual(0.0, float(metric.result()))


class NonFiniteLossCheckTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.get_temp_dir()
    self.names = ('mlm_loss', 'rtd_loss')

  def _save_checkpoint(self):
    return tf.train.Checkpoint(v=tf.Variable(1.0)).save(os.path.join(self.model_dir, 'ckpt'))

  def test_finite_loss_passes(self):
    check = non_finite.NonFiniteLossCheck(self.model_dir, self.names, recovery_max_trials=0)
    check(_loop_output(3.0, mlm_loss=2.0, rtd_loss=0.5))

  def test_stop_names_step_terms_and_intact_checkpoint(self):
    prefix = self._save_checkpoint()
    check = non_finite.NonFiniteLossCheck(self.model_dir, self.names, recovery_max_trials=0)
    with self.assertRaises(non_finite.NonFiniteLossError) as raised:
      check(_loop_output(np.nan, step=37, mlm_loss=np.nan, rtd_loss=0.25))
    message = str(raised.exception)
    self.assertIn('training loss nan at step 37', message)
    self.assertIn('mlm_loss=nan, rtd_loss=0.25', message)
    self.assertIn(f'The last good checkpoint, {prefix}, is intact', message)
    self.assertIn('trainer.recovery_max_trials=N', message)

  def test_rollbacks_are_logged_until_the_trials_run_out(self):
    self._save_checkpoint()
    check = non_finite.NonFiniteLossCheck(self.model_dir, self.names, recovery_max_trials=2)
    for trial in (1, 2):
      with self.assertLogs(level='WARNING') as logs:
        check(_loop_output(np.inf, step=40 + trial, mlm_loss=np.inf, rtd_loss=0.3))
      self.assertIn(f'at step {40 + trial}', logs.output[0])
      self.assertIn(f'rolling back to {self.model_dir}', logs.output[0])
      self.assertIn(f'recovery {trial} of trainer.recovery_max_trials=2', logs.output[0])
    with self.assertRaisesRegex(non_finite.NonFiniteLossError, r'used 2 of 2'):
      check(_loop_output(np.nan, step=43))

  def test_no_checkpoint_yet_stops_even_with_rollbacks_configured(self):
    check = non_finite.NonFiniteLossCheck(self.model_dir, self.names, recovery_max_trials=3)
    with self.assertRaisesRegex(non_finite.NonFiniteLossError,
                                'at step 2 .*no checkpoint was written yet'):
      check(_loop_output(np.nan, step=2, mlm_loss=np.nan, rtd_loss=np.nan))


if __name__ == '__main__':
  tf.test.main()
