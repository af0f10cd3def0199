"""Scores BLiMP minimal pairs with a pretrained model: accuracy per paradigm and phenomenon.

Installed as `teams-minimal-pairs`; the command lives in
`teams_tf/cli/minimal_pairs.py`, and `--help` lists its flags.
"""

from teams_tf.cli import minimal_pairs

if __name__ == '__main__':
  minimal_pairs.run()
