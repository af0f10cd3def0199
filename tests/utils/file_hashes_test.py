"""Tests for teams_tf.utils.file_hashes: the streamed hash is the hash of the whole file."""

import hashlib
import os

import tensorflow as tf

from teams_tf.utils import file_hashes


class FileHashesTest(tf.test.TestCase):

  def test_a_file_longer_than_one_read_block_hashes_as_its_whole_contents(self):
    contents = os.urandom((1 << 20) * 2 + 17)
    path = os.path.join(self.get_temp_dir(), 'vocab.txt')
    with open(path, 'wb') as f:
      f.write(contents)
    self.assertEqual(hashlib.sha256(contents).hexdigest(), file_hashes.sha256(path))

  def test_an_empty_file_hashes_as_empty_contents(self):
    path = os.path.join(self.get_temp_dir(), 'empty.txt')
    open(path, 'wb').close()
    self.assertEqual(hashlib.sha256(b'').hexdigest(), file_hashes.sha256(path))


if __name__ == '__main__':
  tf.test.main()
