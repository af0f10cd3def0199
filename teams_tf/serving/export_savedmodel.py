"""Training checkpoint -> SavedModel: kept encoders, fine-tuned heads, whole pretrainers.

Five kinds, each read from a training `model_dir` (its `params.yaml` and a checkpoint):
- `encoder`: the kept encoder of a pretraining run (checkpoint item `encoder`, laid out as Model
  Garden's `BertEncoderV2`) with the TF Hub text-encoder interface, and the matching TF Hub
  preprocessing model, both written by Model Garden's `export_tfhub_lib`.
- `classifier`: a Model Garden `SentencePredictionTask` run, served from raw text by
  `export_modules.TextClassifier`.
- `squad`: a Model Garden `QuestionAnsweringTask` run, served from a raw question and context by
  `export_modules.TextQuestionAnswering`.
- `fill_mask`: a COCO-LM pretraining run's main Transformer and CLM head, filling [MASK] tokens
  (`fill_mask.FillMask`).
- `pll`: a SCRIPT pretraining run scoring raw sentences with SCRIPT's one-pass PLL and the classic
  masked-LM PLL (`pll_scoring.PllScorer`).
Each setting comes from its flag if given, else from the run's `params.yaml`, else from the
`params.yaml` of the pretraining run named by `task.init_checkpoint` (where GLUE runs on TFRecords
keep the vocabulary and its casing).
"""

import dataclasses
import os
import tempfile
from typing import List, Optional, Sequence

import tensorflow as tf

from official.core import export_base
from official.nlp.configs import encoders
from official.nlp.tasks import question_answering
from official.nlp.tools import export_tfhub_lib

from teams_tf.configs import models as model_configs
from teams_tf.models import coco_lm_pretrainer
from teams_tf.serving import export_modules
from teams_tf.serving import fill_mask
from teams_tf.serving import loaders
from teams_tf.tasks import sentence_prediction_task
from teams_tf.training import run_settings

# Signature names: raw text in the default signature, Model Garden's token-id signature beside it.
TEXT_SIGNATURE = 'serving_default'
TOKEN_IDS_SIGNATURE = 'serve_token_ids'
_FUNCTION_KEYS = {'serve_text': TEXT_SIGNATURE, 'serve': TOKEN_IDS_SIGNATURE}


@dataclasses.dataclass(frozen=True)
class ExportedModel:
  """One written SavedModel.

  Attributes:
    path: its directory.
    checkpoint_path: the checkpoint its weights come from.
    usage: how to call it (signatures, inputs and outputs), for people reading the CLI output.
  """
  path: str
  checkpoint_path: str
  usage: str


def export_encoder(export_dir: str, *, encoder_config: encoders.EncoderConfig,
                   checkpoint_path: str, vocab_file: str, lower_case: bool,
                   seq_length: int) -> List[ExportedModel]:
  """Writes the TF Hub encoder to `export_dir/encoder`, its preprocessor to `.../preprocessing`.

  Args:
    export_dir: output directory.
    encoder_config: the pretrained encoder, e.g. type `bert_v2` for this project's runs.
    checkpoint_path: a checkpoint whose root item `encoder` holds that encoder.
    vocab_file: its WordPiece vocabulary (or `sample:vocab`); copied into the preprocessor.
    lower_case: whether the vocabulary is uncased.
    seq_length: T, the preprocessor's default packed length.

  Returns:
    The two `ExportedModel`s, encoder first.
  """
  vocab = loaders.check_fits_encoder(encoder_config, vocab_file, seq_length)
  encoder = loaders.restored_encoder(encoder_config, checkpoint_path)
  encoder_dir = os.path.join(export_dir, 'encoder')
  preprocessing_dir = os.path.join(export_dir, 'preprocessing')
  with tempfile.TemporaryDirectory() as tmp:
    # export_model also restores the checkpoint root `model` into the encoder (for legacy BERT
    # checkpoints); in a pretraining checkpoint that is the whole pretrainer, so give it an
    # encoder-only copy.
    encoder_only = tf.train.Checkpoint(encoder=encoder).save(os.path.join(tmp, 'encoder'))
    export_tfhub_lib.export_model(
        encoder_dir, encoder_config=encoder_config, model_checkpoint_path=encoder_only,
        with_mlm=False, vocab_file=vocab.path, do_lower_case=lower_case)
  export_tfhub_lib.export_preprocessing(
      preprocessing_dir, vocab_file=vocab.path, do_lower_case=lower_case,
      tokenize_with_offsets=False, default_seq_length=seq_length)
  return [
      ExportedModel(
          encoder_dir, checkpoint_path,
          'TF Hub encoder: obj(dict(input_word_ids=, input_mask=, input_type_ids=)) with int32 '
          '[B, T] -> sequence_output [B, T, H], pooled_output (= default) [B, H], '
          'encoder_outputs (one [B, T, H] per layer)'),
      ExportedModel(
          preprocessing_dir, checkpoint_path,
          f'TF Hub preprocessor: obj([B] strings) -> encoder inputs of T={seq_length}; two '
          'segments: obj.bert_pack_inputs([obj.tokenize(a), obj.tokenize(b)], seq_length=T)'),
  ]


def export_classifier(export_dir: str, *, model_config: sentence_prediction_task.ModelConfig,
                      checkpoint_path: str, vocab_file: str, lower_case: bool, seq_length: int,
                      text_fields: Sequence[str]) -> List[ExportedModel]:
  """Writes a SentencePredictionTask model served from raw text to `export_dir`.

  Args:
    export_dir: output directory.
    model_config: the fine-tuning run's `task.model`.
    checkpoint_path: a checkpoint whose root item `model` is the task model (Model Garden's trainer
      layout).
    vocab_file, lower_case: the encoder's WordPiece vocabulary (or `sample:vocab`) and casing.
    seq_length: T, the packed length.
    text_fields: one or two segment names, the inputs of the default signature.

  Returns:
    A one-element list with the `ExportedModel`.
  """
  loaders.check_fits_encoder(model_config.encoder, vocab_file, seq_length)
  task = sentence_prediction_task.SentencePredictionTask(
      sentence_prediction_task.SentencePredictionConfig(model=model_config))
  model = task.build_model()
  module = export_modules.TextClassifier(
      model, num_classes=model_config.num_classes, text_fields=text_fields,
      vocab_file=vocab_file, lower_case=lower_case, seq_length=seq_length)
  loaders.restore(checkpoint_path, 'a sentence-prediction model', model=model)
  export_base.export(module, _FUNCTION_KEYS, export_dir, timestamped=False)
  outputs = ('score [B] float32' if model_config.num_classes == 1 else
             'label [B] int32, probabilities [B, C], logits [B, C] float32')
  inputs = ', '.join(f'{name}=[B] string' for name in text_fields)
  return [ExportedModel(
      export_dir, checkpoint_path, f'signatures {TEXT_SIGNATURE}({inputs}) -> {outputs}; '
      f'{TOKEN_IDS_SIGNATURE}(input_word_ids, input_mask, input_type_ids: int32 [B, T]) -> '
      'outputs [B, C] logits')]


def export_squad(export_dir: str, *, model_config: question_answering.ModelConfig,
                 checkpoint_path: str, vocab_file: str, lower_case: bool, seq_length: int,
                 max_query_length: int, max_answer_length: int, version_2_with_negative: bool,
                 null_score_diff_threshold: float) -> List[ExportedModel]:
  """Writes a QuestionAnsweringTask model served from raw question and context to `export_dir`.

  Args:
    export_dir: output directory.
    model_config: the fine-tuning run's `task.model`.
    checkpoint_path: a checkpoint whose root item `model` is the task model.
    vocab_file, lower_case: the encoder's WordPiece vocabulary (or `sample:vocab`) and casing.
    seq_length: T, the packed length; longer contexts are truncated.
    max_query_length, max_answer_length, version_2_with_negative, null_score_diff_threshold: see
      `export_modules.TextQuestionAnswering`.

  Returns:
    A one-element list with the `ExportedModel`.
  """
  loaders.check_fits_encoder(model_config.encoder, vocab_file, seq_length)
  # validation_data=None: the task would otherwise preprocess SQuAD eval files at construction.
  task = question_answering.QuestionAnsweringTask(question_answering.QuestionAnsweringConfig(
      model=model_config, validation_data=None))
  model = task.build_model()
  module = export_modules.TextQuestionAnswering(
      model, vocab_file=vocab_file, lower_case=lower_case, seq_length=seq_length,
      max_query_length=max_query_length, max_answer_length=max_answer_length,
      version_2_with_negative=version_2_with_negative,
      null_score_diff_threshold=null_score_diff_threshold)
  loaders.restore(checkpoint_path, 'a question-answering model', model=model)
  export_base.export(module, _FUNCTION_KEYS, export_dir, timestamped=False)
  return [ExportedModel(
      export_dir, checkpoint_path,
      f'signatures {TEXT_SIGNATURE}(question=[B] string, context=[B] string) -> answer_text '
      '[B] string, answer_start/answer_end [B] int32 character offsets, '
      'start_position/end_position [B] int32 token positions, score [B], '
      f'start_logits/end_logits [B, T]; {TOKEN_IDS_SIGNATURE}(input_word_ids, input_mask, '
      'input_type_ids: int32 [B, T]) -> start_logits, end_logits [B, T]; contexts longer than '
      'the window are truncated')]


def export_pll(export_dir: str, *, model_config: model_configs.ScriptConfig,
               checkpoint_path: str, vocab_file: str, lower_case: bool,
               seq_length: int) -> List[ExportedModel]:
  """Writes a SCRIPT model that scores raw sentences with both PLLs to `export_dir`.

  Arguments as for `export_fill_mask`, for a SCRIPT pretraining run.
  """
  module = loaders.pll_scorer(model_config, checkpoint_path, vocab_file, lower_case, seq_length)
  export_base.export(module, _FUNCTION_KEYS, export_dir, timestamped=False)
  return [ExportedModel(
      export_dir, checkpoint_path,
      f'signatures {TEXT_SIGNATURE}(text=[B] string) -> pll [B] (SCRIPT Eq. 7, one pass), '
      'masked_lm_pll [B] (Salazar et al., one pass per token), num_tokens [B]; '
      f'{TOKEN_IDS_SIGNATURE}(input_word_ids, input_mask, input_type_ids: int32 [B, T]) -> the '
      'same')]


def export_fill_mask(export_dir: str, *, model_config: model_configs.CocoLmConfig,
                     checkpoint_path: str, vocab_file: str, lower_case: bool, seq_length: int,
                     top_k: int = 5) -> List[ExportedModel]:
  """Writes a COCO-LM main Transformer + CLM head that fills [MASK] tokens to `export_dir`.

  Args:
    export_dir: output directory.
    model_config: the pretraining run's `task.model`.
    checkpoint_path: a checkpoint whose root item `model` is the COCO-LM pretrainer.
    vocab_file, lower_case: the model's WordPiece vocabulary (or `sample:vocab`) and casing.
    seq_length: T, the packed length; longer texts are truncated.
    top_k: proposals per [MASK].

  Returns:
    A one-element list with the `ExportedModel`.
  """
  pretrainer = loaders.restored_pretrainer(coco_lm_pretrainer.build_coco_lm_pretrainer,
                                           model_config, checkpoint_path, vocab_file, seq_length)
  module = fill_mask.FillMask(pretrainer, fill_mask.FillMaskParams(
      vocab_file=vocab_file, lower_case=lower_case, seq_length=seq_length, top_k=top_k))
  export_base.export(module, _FUNCTION_KEYS, export_dir, timestamped=False)
  return [ExportedModel(
      export_dir, checkpoint_path,
      f'signatures {TEXT_SIGNATURE}(text=[B] string with [MASK]s) -> input_word_ids [B, T], '
      'mask_positions [B, M] (-1 padding), top_ids/top_tokens/top_probabilities [B, M, '
      f'{top_k}]; {TOKEN_IDS_SIGNATURE}(input_word_ids, input_mask, input_type_ids, '
      'masked_lm_positions: int32) -> log_probs [B, P, V] (COCO-LM Eq. 2 p_LM)')]


@dataclasses.dataclass(frozen=True)
class _Run:
  """A training run being exported: its params.yaml values and the caller's explicit settings."""
  settings: run_settings.RunSettings
  model_values: dict
  params_path: str
  checkpoint_path: str
  given: dict

  def get(self, name, *keys, **default):
    """The caller's `name` if given, else the first of `keys` in params.yaml (`RunSettings.get`)."""
    return self.settings.get(name, self.given.get(name), *keys, **default)

  def model_config(self, config):
    return run_settings.parse_model_config(config, self.model_values, self.params_path)


def _encoder_arguments(run):
  return dict(encoder_config=run_settings.kept_encoder_config(
      run.model_values, run.params_path, run.checkpoint_path))


def _classifier_arguments(run):
  return dict(model_config=run.model_config(sentence_prediction_task.ModelConfig()),
              text_fields=run.get('text_fields', 'task.train_data.text_fields'))


def _squad_arguments(run):
  return dict(
      model_config=run.model_config(question_answering.ModelConfig()),
      max_query_length=run.get('max_query_length', 'task.validation_data.query_length',
                               'task.train_data.query_length'),
      max_answer_length=run.get('max_answer_length', 'task.max_answer_length'),
      version_2_with_negative=run.get('version_2_with_negative',
                                      'task.train_data.version_2_with_negative', default=False),
      null_score_diff_threshold=run.get('null_score_diff_threshold',
                                        'task.null_score_diff_threshold', default=0.0))


def _fill_mask_arguments(run):
  return dict(model_config=run.model_config(model_configs.CocoLmConfig()))


def _pll_arguments(run):
  return dict(model_config=run.model_config(model_configs.ScriptConfig()))


# kind -> (exporter, its kind-specific arguments read from the run).
_EXPORTERS = {
    'encoder': (export_encoder, _encoder_arguments),
    'classifier': (export_classifier, _classifier_arguments),
    'squad': (export_squad, _squad_arguments),
    'fill_mask': (export_fill_mask, _fill_mask_arguments),
    'pll': (export_pll, _pll_arguments),
}
KINDS = tuple(_EXPORTERS)


def export_from_model_dir(kind: str, model_dir: str, export_dir: str, *,
                          checkpoint_path: Optional[str] = None,
                          vocab_file: Optional[str] = None,
                          lower_case: Optional[bool] = None,
                          seq_length: Optional[int] = None,
                          text_fields: Optional[Sequence[str]] = None,
                          max_query_length: Optional[int] = None,
                          max_answer_length: Optional[int] = None) -> List[ExportedModel]:
  """Exports the `kind` of model trained in `model_dir`; arguments left None come from params.yaml.

  Args:
    kind: one of `KINDS`.
    model_dir: the training model_dir (params.yaml and checkpoints).
    export_dir: output directory.
    checkpoint_path: a checkpoint; default the latest one in `model_dir`.
    vocab_file: default `task.train_data.vocab_file`.
    lower_case: default `task.train_data.lower_case` (`do_lower_case` for SQuAD).
    seq_length: default `task.train_data.seq_length`.
    text_fields: classifier only; default `task.train_data.text_fields` (raw-text GLUE data).
    max_query_length: squad only; default `task.validation_data.query_length`.
    max_answer_length: squad only; default `task.max_answer_length`.

  Returns:
    The written `ExportedModel`s.

  Raises:
    ValueError: an unknown kind, a missing file or setting, or a checkpoint that does not match.
  """
  if kind not in _EXPORTERS:
    raise ValueError(f'Unknown kind {kind!r}; valid kinds are {", ".join(KINDS)}.')
  settings = run_settings.RunSettings(model_dir)
  checkpoint_path = loaders.resolve_checkpoint(model_dir, checkpoint_path)
  params_path = os.path.join(model_dir, 'params.yaml')
  run = _Run(settings, settings.params.get('task', {}).get('model'), params_path,
             checkpoint_path, given=dict(
                 vocab_file=vocab_file, lower_case=lower_case, seq_length=seq_length,
                 text_fields=text_fields, max_query_length=max_query_length,
                 max_answer_length=max_answer_length))
  common = dict(
      checkpoint_path=checkpoint_path,
      # A SQuAD run on records names its vocabulary only where the dev JSON is read.
      vocab_file=run.get('vocab_file', 'task.train_data.vocab_file',
                         'task.validation_data.vocab_file'),
      lower_case=run.get('lower_case', 'task.train_data.lower_case',
                         'task.train_data.do_lower_case', 'task.validation_data.do_lower_case'),
      seq_length=run.get('seq_length', 'task.train_data.seq_length'))
  if not run.model_values:
    raise ValueError(f'{params_path} has no task.model; --model_dir must be a training model_dir.')
  exporter, kind_arguments = _EXPORTERS[kind]
  return exporter(export_dir, **common, **kind_arguments(run))
