"""Fine-tunes one pretraining checkpoint on GLUE tasks with several seeds; median/mean/std table.

Installed as `teams-run-glue`; the command lives in
`teams_tf/cli/run_glue.py`, and `--help` lists its flags.
"""

from teams_tf.cli import run_glue

if __name__ == '__main__':
  run_glue.run()
