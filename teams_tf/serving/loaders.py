"""Restoring trained models from a training `model_dir`: one checkpoint resolver, one restore.

The exporters (`export_savedmodel.py`) and the scoring and conversion tools build the models of a
run and restore them here, with the same checks: the vocabulary and sequence length fit the
encoder, and every weight the model needs is found in the checkpoint.
"""

import os
from typing import Optional, Sequence

import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf.configs import models as model_configs
from teams_tf.data import tokenization
from teams_tf.models import script_pretrainer
from teams_tf.serving import pll_scoring
from teams_tf.serving import sentence_scoring
from teams_tf.training import run_settings
from teams_tf.utils import checkpoint_paths


def resolve_checkpoint(model_dir: str, checkpoint_path: Optional[str] = None) -> str:
  """The prefix `checkpoint_path` names if given, else the latest checkpoint in `model_dir`.

  Raises:
    ValueError: `checkpoint_path` names no checkpoint, or is not given and `model_dir` holds none.
  """
  if checkpoint_path:
    return checkpoint_paths.resolve_prefix(checkpoint_path)
  try:
    return checkpoint_paths.resolve_prefix(model_dir)
  except ValueError as e:
    raise ValueError(f'No checkpoint in {model_dir}; pass --checkpoint_path.') from e


def check_fits_encoder(encoder_config, vocab_file, seq_length):
  """Validates the vocabulary and T against the encoder; returns the loaded `Vocabulary`."""
  bert_config = encoder_config.get()
  vocab = tokenization.load_vocabulary(vocab_file)
  if vocab.size != bert_config.vocab_size:
    raise ValueError(f'Vocabulary {vocab.path} has {vocab.size} tokens but the encoder has '
                     f'vocab_size={bert_config.vocab_size}; pass the --vocab_file the encoder was '
                     'pretrained with.')
  if seq_length > bert_config.max_position_embeddings:
    raise ValueError(f'seq_length={seq_length} exceeds the encoder\'s max_position_embeddings='
                     f'{bert_config.max_position_embeddings}; pass a smaller --seq_length.')
  return vocab


def restore(checkpoint_path, what, **items):
  """Reads `items` (checkpoint root name -> object) and requires every object to be found."""
  try:
    tf.train.Checkpoint(**items).read(checkpoint_path).expect_partial(
    ).assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    raise ValueError(f'Checkpoint {checkpoint_path} does not hold {what} described by params.yaml '
                     f'(wrong --kind or --model_dir?): {" ".join(str(e).split())[:1000]}') from e


def restored_encoder(encoder_config, checkpoint_path):
  """Builds the Model Garden encoder of `encoder_config` and restores checkpoint item `encoder`."""
  encoder = encoders.build_encoder(encoder_config)
  dummy = tf.ones([1, 1], tf.int32)
  encoder(dict(input_word_ids=dummy, input_mask=dummy, input_type_ids=dummy))  # Creates variables.
  restore(checkpoint_path, 'an encoder', encoder=encoder)
  return encoder


def restored_pretrainer(build, model_config, checkpoint_path, vocab_file, seq_length):
  """A whole pretrainer built by `build(model_config)`, restored from checkpoint root `model`.

  Raises:
    ValueError: a vocabulary or T that does not fit the encoder, or a checkpoint that does not
      hold this pretrainer.
  """
  check_fits_encoder(encoders.EncoderConfig(type='bert_v2', bert_v2=model_config.encoder),
                      vocab_file, seq_length)
  pretrainer = run_settings.built_pretrainer(build, model_config)
  run_settings.restore_pretrainer(pretrainer, checkpoint_path)
  return pretrainer


def restore_pretrained_encoder(model_dir: str, checkpoint_path: Optional[str] = None,
                               vocab_file: Optional[str] = None,
                               lower_case: Optional[bool] = None):
  """Builds the kept encoder of a pretraining run and restores its weights.

  Args:
    model_dir: the pretraining model_dir (params.yaml and checkpoints).
    checkpoint_path: a checkpoint; default the latest one in `model_dir`.
    vocab_file: default `task.train_data.vocab_file`.
    lower_case: default `task.train_data.lower_case`.

  Returns:
    (encoder, encoder_config, vocab, lower_case): a restored Model Garden encoder, its
    `EncoderConfig`, the loaded `Vocabulary` and the casing.

  Raises:
    ValueError: a missing file or setting, or a checkpoint that does not match.
  """
  settings = run_settings.RunSettings(model_dir)
  checkpoint_path = resolve_checkpoint(model_dir, checkpoint_path)
  params_path = os.path.join(model_dir, 'params.yaml')
  encoder_config = run_settings.kept_encoder_config(
      settings.params.get('task', {}).get('model') or {}, params_path, checkpoint_path)
  vocab = check_fits_encoder(
      encoder_config, settings.get('vocab_file', vocab_file, 'task.train_data.vocab_file'), 1)
  encoder = restored_encoder(encoder_config, checkpoint_path)
  lower_case = settings.get('lower_case', lower_case, 'task.train_data.lower_case')
  return encoder, encoder_config, vocab, lower_case


def pll_scorer(model_config: model_configs.ScriptConfig, checkpoint_path: str, vocab_file: str,
               lower_case: bool, seq_length: int) -> pll_scoring.PllScorer:
  """The `PllScorer` of a restored SCRIPT pretrainer (what `export_savedmodel.export_pll` saves).

  Raises:
    ValueError: a vocabulary or T that does not fit the encoder, or a checkpoint that does not
      hold this pretrainer.
  """
  pretrainer = restored_pretrainer(script_pretrainer.build_script_pretrainer, model_config,
                                   checkpoint_path, vocab_file, seq_length)
  return pll_scoring.PllScorer(pretrainer, pll_scoring.PllScorerParams(
      vocab_file=vocab_file, lower_case=lower_case, seq_length=seq_length))


def load_pll_scorer(model_dir: str, checkpoint_path: Optional[str] = None,
                    seq_length: Optional[int] = None) -> pll_scoring.PllScorer:
  """The `PllScorer` of a SCRIPT pretraining run (settings from its params.yaml).

  Raises:
    ValueError: not a SCRIPT run, no checkpoint, or a checkpoint that does not match.
  """
  settings = run_settings.RunSettings(model_dir)
  model_config = run_settings.parse_model_config(
      model_configs.ScriptConfig(), settings.params.get('task', {}).get('model') or {},
      os.path.join(model_dir, 'params.yaml'))
  return pll_scorer(
      model_config, resolve_checkpoint(model_dir, checkpoint_path),
      vocab_file=settings.get('vocab_file', None, 'task.train_data.vocab_file'),
      lower_case=settings.get('lower_case', None, 'task.train_data.lower_case'),
      seq_length=settings.get('seq_length', seq_length, 'task.train_data.seq_length'))


def load_sentence_scorers(model_dir: str, methods: Optional[Sequence[str]] = None,
                          checkpoint_path: Optional[str] = None, random_init: bool = False,
                          batch_size: int = 256, jit_compile: bool = False,
                          seq_length: Optional[int] = None):
  """`sentence_scoring.SentenceScorer`s of one restored pretraining run, with its text settings.

  Args:
    model_dir: the pretraining model_dir (params.yaml and checkpoints).
    methods: some of `sentence_scoring.METHODS` the run's pretrainer supports; default every one
      it supports.
    checkpoint_path: a checkpoint; default the latest in `model_dir`.
    random_init: score with fresh weights of the run's shape instead of its checkpoint.
    batch_size: rows per forward pass.
    jit_compile: compile the forward passes with XLA.
    seq_length: T the texts are packed to; default the run's `task.train_data.seq_length`.

  Returns:
    ({method: scorer}, vocab, lower_case, seq_length), the methods in the order asked (default:
    sorted).

  Raises:
    ValueError: not a pretraining run, a method its pretrainer lacks, a T the encoder cannot
      take, or a checkpoint that does not match.
  """
  settings = run_settings.RunSettings(model_dir)
  params_path = os.path.join(model_dir, 'params.yaml')
  model_config, build = run_settings.pretraining_model(
      settings.params.get('task', {}).get('model') or {}, params_path)
  vocab_file = settings.get('vocab_file', None, 'task.train_data.vocab_file')
  lower_case = settings.get('lower_case', None, 'task.train_data.lower_case')
  seq_length = settings.get('seq_length', seq_length, 'task.train_data.seq_length')
  if random_init:
    vocab = check_fits_encoder(encoders.EncoderConfig(type='bert_v2', bert_v2=model_config.encoder),
                               vocab_file, seq_length)
    pretrainer = run_settings.built_pretrainer(build, model_config)
  else:
    pretrainer = restored_pretrainer(build, model_config,
                                     resolve_checkpoint(model_dir, checkpoint_path), vocab_file,
                                     seq_length)
    vocab = tokenization.load_vocabulary(vocab_file)
  supported = sentence_scoring.methods(pretrainer)
  unknown = [m for m in methods or () if m not in supported]
  if unknown:
    raise ValueError(f'{type(pretrainer).__name__} of {model_dir} has no method '
                     f'{", ".join(map(repr, unknown))}; use some of '
                     f'{", ".join(sorted(supported))}.')
  scorers = {m: sentence_scoring.SentenceScorer(supported[m], vocab, batch_size, jit_compile)
             for m in methods or sorted(supported)}
  return scorers, vocab, lower_case, seq_length


def load_sentence_scorer(model_dir: str, method: str, checkpoint_path: Optional[str] = None,
                         random_init: bool = False, batch_size: int = 256,
                         jit_compile: bool = False):
  """The `SentenceScorer` of one method: `load_sentence_scorers` for `[method]`.

  Returns:
    (scorer, vocab, lower_case, seq_length).
  """
  scorers, vocab, lower_case, seq_length = load_sentence_scorers(
      model_dir, [method], checkpoint_path, random_init, batch_size, jit_compile)
  return scorers[method], vocab, lower_case, seq_length
