"""Writes the kept encoder of a pretraining run as a Hugging Face ELECTRA checkpoint.

Installed as `teams-convert-to-hf`; the command lives in
`teams_tf/cli/convert_to_hf.py`, and `--help` lists its flags.
"""

from teams_tf.cli import convert_to_hf

if __name__ == '__main__':
  convert_to_hf.run()
