"""Tests for teams_tf.utils.checkpoint_paths on real checkpoints written to a temporary folder."""

import os
import re

import tensorflow as tf

from teams_tf.utils import checkpoint_paths


class ResolvePrefixTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.model_dir = os.path.join(self.get_temp_dir(), 'run')
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(step=tf.Variable(0)), self.model_dir, max_to_keep=None)
    # Two saves, so that a directory resolving to the first one would be caught.
    self.first, self.latest = manager.save(), manager.save()

  def test_directory_resolves_to_its_latest_checkpoint(self):
    self.assertEqual(os.path.join(self.model_dir, 'ckpt-2'), self.latest)
    self.assertEqual(self.latest, checkpoint_paths.resolve_prefix(self.model_dir))

  def test_prefix_resolves_to_itself(self):
    self.assertEqual(self.first, checkpoint_paths.resolve_prefix(self.first))
    self.assertEqual(self.latest, checkpoint_paths.resolve_prefix(self.latest))

  def test_directory_without_a_checkpoint_is_named_in_the_error(self):
    empty = os.path.join(self.get_temp_dir(), 'empty')
    os.makedirs(empty)
    with self.assertRaisesRegex(ValueError, f'Directory {re.escape(empty)} holds no checkpoint'):
      checkpoint_paths.resolve_prefix(empty)

  def test_path_that_is_no_prefix_is_named_in_the_error(self):
    missing = os.path.join(self.model_dir, 'ckpt-7')
    with self.assertRaisesRegex(ValueError, f'{re.escape(missing)} is neither a directory '
                                'nor a checkpoint prefix'):
      checkpoint_paths.resolve_prefix(missing)


if __name__ == '__main__':
  tf.test.main()
