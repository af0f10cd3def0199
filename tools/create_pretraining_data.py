"""Builds pretraining TFRecords from text files or a TFDS dataset.

Installed as `teams-create-pretraining-data`; the command lives in
`teams_tf/cli/create_pretraining_data.py`, and `--help` lists its flags.
"""

from teams_tf.cli import create_pretraining_data

if __name__ == '__main__':
  create_pretraining_data.run()
