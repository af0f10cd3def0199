"""GLUE train/dev TFRecords for Model Garden's sentence-prediction task (`glue_<task>_<size>`).

Installed as `teams-create-glue-data`; the command lives in
`teams_tf/cli/create_glue_data.py`, and `--help` lists its flags.
"""

from teams_tf.cli import create_glue_data

if __name__ == '__main__':
  create_glue_data.run()
