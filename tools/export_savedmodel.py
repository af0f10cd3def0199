"""Exports a pretrained encoder, a fine-tuned GLUE or SQuAD model, or a COCO-LM/SCRIPT scorer.

Installed as `teams-export`; the command lives in
`teams_tf/cli/export_savedmodel.py`, and `--help` lists its flags.
"""

from teams_tf.cli import export_savedmodel

if __name__ == '__main__':
  export_savedmodel.run()
