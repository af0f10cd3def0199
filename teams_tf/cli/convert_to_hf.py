r"""Writes the kept encoder of a pretraining run as a Hugging Face ELECTRA checkpoint.

  pip install -e '.[hf]'
  python -m teams_tf.train --experiment=teams_demo --mode=train \
      --model_dir=/tmp/teams_demo_post_ln \
      --params_override=task.model.encoder.norm_first=false,task.model.relative_position_bias=false
  teams-convert-to-hf --model_dir=/tmp/teams_demo_post_ln --output_dir=/tmp/teams_demo_hf

  from transformers import AutoModel, AutoTokenizer
  model = AutoModel.from_pretrained('/tmp/teams_demo_hf')       # transformers.ElectraModel
  tokenizer = AutoTokenizer.from_pretrained('/tmp/teams_demo_hf')

Works for every run whose kept encoder is BERT/ELECTRA-shaped: post-LN with absolute positions
only, as every paper size but COCO-LM's (`coco_lm_<size>_no_rel_pos` converts) and not the
pre-LN, relative-position `*_demo` and `*_mini` recipes;
`teams_tf.serving.hf_conversion` documents the mapping.
"""

import sys

from absl import flags

from teams_tf.serving import hf_conversion
from teams_tf.serving import loaders
from teams_tf.utils import entry_points

_MODEL_DIR = flags.DEFINE_string(
    'model_dir', None, 'Pretraining model_dir holding params.yaml and the checkpoints.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', None, 'Directory for the Hugging Face files.')
_CHECKPOINT_PATH = flags.DEFINE_string(
    'checkpoint_path', None, 'Checkpoint to convert; default: the latest in --model_dir.')
_VOCAB_FILE = flags.DEFINE_string(
    'vocab_file', None, 'WordPiece vocabulary; default: task.train_data.vocab_file.')


def main(_):
  try:
    encoder, encoder_config, vocab, lower_case = loaders.restore_pretrained_encoder(
        _MODEL_DIR.value, _CHECKPOINT_PATH.value, _VOCAB_FILE.value)
    hf_conversion.export_to_hf(encoder, encoder_config.get(), vocab.path, lower_case,
                               vocab.pad_id, _OUTPUT_DIR.value)
  except ValueError as e:
    sys.exit(f'error: {e}')
  print(f'wrote {_OUTPUT_DIR.value} (transformers.ElectraModel, vocab.txt, tokenizer files) '
        f'from {_MODEL_DIR.value}')


def run():
  """The `teams-convert-to-hf` command; `python tools/convert_to_hf.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['model_dir', 'output_dir'])


if __name__ == '__main__':
  run()
