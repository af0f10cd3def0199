"""Content hashes of files, the identity releases, records and vocabularies are compared by."""

import hashlib

import tensorflow as tf


def sha256(path: str) -> str:
  """Hex sha256 of the file at `path` (any `tf.io.gfile` path), read in 1 MiB blocks."""
  digest = hashlib.sha256()
  with tf.io.gfile.GFile(path, 'rb') as f:
    for block in iter(lambda: f.read(1 << 20), b''):
      digest.update(block)
  return digest.hexdigest()
