"""Learns a WordPiece vocabulary from text files or a TFDS dataset.

Installed as `teams-build-vocab`; the command lives in
`teams_tf/cli/build_vocab.py`, and `--help` lists its flags.
"""

from teams_tf.cli import build_vocab

if __name__ == '__main__':
  build_vocab.run()
