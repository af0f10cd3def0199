"""Scores sentences with a SCRIPT model: one-pass self-critic PLL and/or masked-LM PLL.

Installed as `teams-score`; the command lives in
`teams_tf/cli/score.py`, and `--help` lists its flags.
"""

from teams_tf.cli import score

if __name__ == '__main__':
  score.run()
