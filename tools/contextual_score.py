"""TACO's contextual score of a pretraining checkpoint: intra- vs inter-context cosine similarity.

Installed as `teams-contextual-score`; the command lives in
`teams_tf/cli/contextual_score.py`, and `--help` lists its flags.
"""

from teams_tf.cli import contextual_score

if __name__ == '__main__':
  contextual_score.run()
