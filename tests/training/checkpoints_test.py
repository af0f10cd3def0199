"""A damaged latest checkpoint is detected and set aside, and the previous one is used."""

import os

import numpy as np
import tensorflow as tf

from teams_tf.training import checkpoints


def _save_steps(model_dir, steps):
  """Checkpoints like Model Garden's trainer writes them (a `global_step`), one per step."""
  step = tf.Variable(0, dtype=tf.int64)
  weights = tf.Variable(np.zeros([64, 64], np.float32))
  manager = tf.train.CheckpointManager(
      tf.train.Checkpoint(global_step=step, weights=weights), model_dir, max_to_keep=5)
  for value in steps:
    step.assign(value)
    weights.assign(np.full([64, 64], value, np.float32))
    manager.save(checkpoint_number=value)


def _data_file(prefix):
  return prefix + '.data-00000-of-00001'


class LatestRestorableTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = self.get_temp_dir()
    _save_steps(self.model_dir, [2, 4, 6])
    self.prefix = lambda step: os.path.join(self.model_dir, f'ckpt-{step}')

  def test_intact_latest_is_kept(self):
    self.assertEqual(self.prefix(6), checkpoints.latest_restorable(self.model_dir))
    self.assertEqual(6, checkpoints.global_step(self.prefix(6)))
    self.assertFalse(os.path.exists(os.path.join(self.model_dir, checkpoints.CORRUPTED_DIR)))

  def test_truncated_latest_is_set_aside_and_previous_used(self):
    with open(_data_file(self.prefix(6)), 'r+b') as f:
      f.truncate(100)
    self.assertEqual(self.prefix(4), checkpoints.latest_restorable(self.model_dir))
    # Model Garden's CheckpointManager now resumes from step 4, and nothing was deleted.
    self.assertEqual(self.prefix(4), tf.train.latest_checkpoint(self.model_dir))
    corrupted = os.path.join(self.model_dir, checkpoints.CORRUPTED_DIR)
    self.assertCountEqual(['ckpt-6.index', 'ckpt-6.data-00000-of-00001'], os.listdir(corrupted))
    self.assertEqual(100, os.path.getsize(os.path.join(corrupted, 'ckpt-6.data-00000-of-00001')))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), self.model_dir, max_to_keep=5)
    self.assertEqual([self.prefix(2), self.prefix(4)], manager.checkpoints)

  def test_flipped_byte_is_caught_by_the_checksum(self):
    with open(_data_file(self.prefix(6)), 'r+b') as f:
      f.seek(1000)
      byte = f.read(1)
      f.seek(1000)
      f.write(bytes([byte[0] ^ 0xFF]))
    self.assertIn('checksum', checkpoints.checkpoint_error(self.prefix(6)).lower())
    self.assertEqual(self.prefix(4), checkpoints.latest_restorable(self.model_dir))

  def test_missing_index_falls_back_twice(self):
    os.remove(self.prefix(6) + '.index')
    with open(_data_file(self.prefix(4)), 'r+b') as f:
      f.truncate(10)
    self.assertEqual(self.prefix(2), checkpoints.latest_restorable(self.model_dir))
    self.assertEqual(2, checkpoints.global_step(tf.train.latest_checkpoint(self.model_dir)))

  def test_save_killed_before_the_state_file_leaves_the_previous_latest(self):
    # What a SIGKILL during `CheckpointManager.save` leaves: files of the new step, but the state
    # file (rewritten last, atomically) still names the previous checkpoint.
    with open(_data_file(self.prefix(8)), 'wb') as f:
      f.write(b'\0' * 50)
    self.assertEqual(self.prefix(6), checkpoints.latest_restorable(self.model_dir))

  def test_no_restorable_checkpoint_is_a_clear_error_and_the_next_run_starts_fresh(self):
    for step in (2, 4, 6):
      os.remove(self.prefix(step) + '.index')
    with self.assertRaisesRegex(RuntimeError, 'no checkpoint in .* can be restored; the damaged '
                                'ones are in .*corrupted_checkpoints. Rerun to start'):
      checkpoints.latest_restorable(self.model_dir)
    self.assertIsNone(checkpoints.latest_restorable(self.model_dir))
    self.assertEqual(0, checkpoints.global_step(None))

  def test_other_workers_pick_the_same_checkpoint_and_change_nothing(self):
    with open(_data_file(self.prefix(6)), 'r+b') as f:
      f.truncate(100)
    self.assertEqual(self.prefix(4),
                     checkpoints.latest_restorable(self.model_dir, set_aside=False))
    self.assertEqual(self.prefix(6), tf.train.latest_checkpoint(self.model_dir))
    self.assertFalse(os.path.exists(os.path.join(self.model_dir, checkpoints.CORRUPTED_DIR)))

  def test_fresh_directory(self):
    self.assertIsNone(checkpoints.latest_restorable(os.path.join(self.model_dir, 'new')))


if __name__ == '__main__':
  tf.test.main()
