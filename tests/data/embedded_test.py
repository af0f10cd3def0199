"""Tests for teams_tf.data.embedded."""

import os

from absl.testing import parameterized
import tensorflow as tf

from teams_tf.data import embedded


class ResolvePathTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(
      ('train', 'sample:train', 'train.txt'),
      ('valid', 'sample:valid', 'valid.txt'),
      ('vocab', 'sample:vocab', 'vocab.txt'),
  )
  def test_sample_names_resolve_to_package_files(self, path, file_name):
    resolved = embedded.resolve_path(path)
    self.assertTrue(os.path.isabs(resolved))
    self.assertEqual(os.path.basename(resolved), file_name)
    self.assertEqual(os.path.basename(os.path.dirname(resolved)), 'sample')
    self.assertGreater(os.path.getsize(resolved), 0)

  @parameterized.named_parameters(
      ('relative', 'data/train.txt'),
      ('absolute_glob', '/data/wiki/*.txt'),
      ('cloud', 'gs://bucket/sample:train'),
      ('empty', ''),
  )
  def test_other_paths_are_unchanged(self, path):
    self.assertEqual(embedded.resolve_path(path), path)

  def test_unknown_sample_name_lists_choices(self):
    with self.assertRaisesRegex(ValueError,
                                r"'sample:test'.*sample:train, sample:valid, sample:vocab"):
      embedded.resolve_path('sample:test')


if __name__ == '__main__':
  tf.test.main()
