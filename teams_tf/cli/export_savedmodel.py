r"""Exports a pretrained encoder, a fine-tuned GLUE or SQuAD model, or a COCO-LM/SCRIPT scorer.

  teams-export --kind=encoder --model_dir=/tmp/teams_demo \
      --export_dir=/tmp/teams_demo_export
  teams-export --kind=classifier --model_dir=/tmp/mnli \
      --export_dir=/tmp/mnli_export --text_fields=premise,hypothesis
  teams-export --kind=squad --model_dir=/tmp/squad \
      --export_dir=/tmp/squad_export
  teams-export --kind=fill_mask --model_dir=/tmp/coco_lm_demo \
      --export_dir=/tmp/coco_lm_fill_mask
  teams-export --kind=pll --model_dir=/tmp/script_demo \
      --export_dir=/tmp/script_pll

Settings not given as flags come from `--model_dir`'s params.yaml, then from the params.yaml of
the pretraining run in its `task.init_checkpoint`. All logic is in `teams_tf.serving`; load the
results with `import tensorflow_text` first (it registers the tokenizer ops).
"""

import sys

from absl import flags

from teams_tf.serving import export_savedmodel
from teams_tf.utils import entry_points

_KIND = flags.DEFINE_enum(
    'kind', None, export_savedmodel.KINDS,
    'encoder: the kept encoder of a pretraining run (TF Hub encoder + preprocessor SavedModels '
    'in <export_dir>/encoder and <export_dir>/preprocessing); classifier: a Model Garden '
    'SentencePredictionTask run served from raw text; squad: a QuestionAnsweringTask run served '
    'from a raw question and context; fill_mask: a COCO-LM pretraining run\'s main Transformer '
    'and CLM head, filling [MASK] tokens in raw text; pll: a SCRIPT pretraining run scoring raw '
    'sentences with its one-pass pseudo-log-likelihood and the masked-LM one.')
_MODEL_DIR = flags.DEFINE_string(
    'model_dir', None, 'Training model_dir holding params.yaml and the checkpoints.')
_EXPORT_DIR = flags.DEFINE_string('export_dir', None, 'Directory the SavedModel(s) are written to.')
_CHECKPOINT_PATH = flags.DEFINE_string(
    'checkpoint_path', None, 'Checkpoint to export; default: the latest in --model_dir.')
_VOCAB_FILE = flags.DEFINE_string(
    'vocab_file', None, 'WordPiece vocabulary of the encoder (or sample:vocab); default: '
    'task.train_data.vocab_file.')
_LOWER_CASE = flags.DEFINE_boolean(
    'lower_case', None, 'Whether the vocabulary is uncased; default: task.train_data.lower_case '
    '(do_lower_case for SQuAD).')
_SEQ_LENGTH = flags.DEFINE_integer(
    'seq_length', None, 'Packed sequence length T (the preprocessor default for --kind=encoder); '
    'longer texts are truncated. Default: task.train_data.seq_length.')
_TEXT_FIELDS = flags.DEFINE_list(
    'text_fields', None, 'classifier: one or two names of the text segments, e.g. sentence or '
    'premise,hypothesis; they name the serving inputs. Default: task.train_data.text_fields.')
_MAX_QUERY_LENGTH = flags.DEFINE_integer(
    'max_query_length', None, 'squad: most question tokens kept; default: '
    'task.validation_data.query_length.')
_MAX_ANSWER_LENGTH = flags.DEFINE_integer(
    'max_answer_length', None, 'squad: most tokens in an answer; default: task.max_answer_length.')


def main(_):
  try:
    exported = export_savedmodel.export_from_model_dir(
        _KIND.value, _MODEL_DIR.value, _EXPORT_DIR.value,
        checkpoint_path=_CHECKPOINT_PATH.value, vocab_file=_VOCAB_FILE.value,
        lower_case=_LOWER_CASE.value, seq_length=_SEQ_LENGTH.value,
        text_fields=_TEXT_FIELDS.value, max_query_length=_MAX_QUERY_LENGTH.value,
        max_answer_length=_MAX_ANSWER_LENGTH.value)
  except ValueError as e:
    sys.exit(f'error: {e}')
  for model in exported:
    print(f'wrote {model.path} from {model.checkpoint_path}\n  {model.usage}')


def run():
  """The `teams-export` command; `python tools/export_savedmodel.py` in a clone."""
  entry_points.run(main, sys.modules[__name__], required=['kind', 'model_dir', 'export_dir'])


if __name__ == '__main__':
  run()
