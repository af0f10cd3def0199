"""Tiny training runs, reference packing and a fresh-process SavedModel runner for serving tests.

The references here are independent of `teams_tf.serving`: token ids come from the project's own
tokenizer (`teams_tf.data.tokenization`), and packing/truncation is re-implemented in NumPy.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import config_definitions as cfg
from official.core import train_utils

from teams_tf.data import embedded
from teams_tf.data import pretrain_dataloader
from teams_tf.data import tokenization
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import taco_pretrainer
from teams_tf.models import teams_pretrainer
from teams_tf.tasks import coco_lm_task
from teams_tf.tasks import taco_task
from teams_tf.tasks import teams_task
from tests import testing_utils

VOCAB = tokenization.load_vocabulary('sample:vocab')
# Hard cases every exported model must serve: non-ASCII, empty, 5000 characters, plain English.
with open(embedded.resolve_path('sample:valid'), encoding='utf-8') as _f:
  LONG_TEXT = ' '.join(_f.read().split())[:5000]
TEXTS = ['Ça va? 東京 — naïve', '', LONG_TEXT, 'The quick brown fox jumps over the lazy dog.']


def tiny_encoder_config(**overrides):
  """The shared tiny encoder over the embedded 3,660-token vocabulary, with dropout.

  Dropout 0.1 makes the comparisons fail if a SavedModel ran in training mode.
  """
  return testing_utils.tiny_encoder_config(vocab_size=VOCAB.size).replace(
      dropout_rate=0.1, **overrides)


def copy_sample_vocab(directory):
  """A private copy of the embedded vocabulary, which tests delete to prove the export owns it."""
  path = os.path.join(directory, 'vocab.txt')
  shutil.copy(VOCAB.path, path)
  return path


def write_pretraining_run(model_dir, vocab_file, seq_length, step=None, **model_overrides):
  """A TEAMS pretraining model_dir (checkpoint and params.yaml) as train.py would leave it.

  `model_overrides` are TeamsConfig fields over the tiny TEAMS config; `step`, if given, is saved
  as the training step (`global_step`), as Model Garden's trainer saves it.

  Returns:
    (pretrainer, checkpoint path).
  """
  model_config = testing_utils.tiny_teams_config(
      encoder=tiny_encoder_config(), **model_overrides)
  model = teams_pretrainer.build_teams_pretrainer(model_config, seed=1)
  return model, _save_pretraining_run(
      model, teams_task.TeamsPretrainTaskConfig, model_config, model_dir, vocab_file, seq_length,
      step)


def write_coco_lm_pretraining_run(model_dir, vocab_file, seq_length, **model_overrides):
  """A COCO-LM pretraining model_dir; `model_overrides` are CocoLmConfig fields.

  Returns:
    (pretrainer, checkpoint path).
  """
  model_config = testing_utils.tiny_coco_lm_config(
      encoder=tiny_encoder_config(), **model_overrides)
  model = coco_lm_pretrainer.build_coco_lm_pretrainer(model_config, seed=1)
  return model, _save_pretraining_run(
      model, coco_lm_task.CocoLmPretrainTaskConfig, model_config, model_dir, vocab_file,
      seq_length)


def write_taco_pretraining_run(model_dir, vocab_file, seq_length, step=None):
  """A TACO pretraining model_dir (its negatives come from the batch's other sequences).

  Returns:
    (pretrainer, checkpoint path).
  """
  model_config = testing_utils.tiny_taco_config(encoder=tiny_encoder_config())
  model = taco_pretrainer.build_taco_pretrainer(model_config, seed=1)
  return model, _save_pretraining_run(
      model, taco_task.TacoPretrainTaskConfig, model_config, model_dir, vocab_file, seq_length,
      step)


def _save_pretraining_run(model, task_config_cls, model_config, model_dir, vocab_file,
                          seq_length, step=None):
  """Checkpoints `model` (root `model` plus its checkpoint items) and writes params.yaml."""
  model(testing_utils.pretraining_batch(vocab_size=VOCAB.size))
  items = {} if step is None else dict(global_step=tf.Variable(step, dtype=tf.int64))
  path = tf.train.Checkpoint(model=model, **model.checkpoint_items, **items).save(
      os.path.join(model_dir, 'ckpt'))
  train_utils.serialize_config(cfg.ExperimentConfig(task=task_config_cls(
      model=model_config, train_data=pretrain_dataloader.PretrainDataConfig(
          vocab_file=vocab_file, lower_case=True, seq_length=seq_length))), model_dir)
  return path


def fine_tune(task, model_dir, batch, steps=2):
  """Fine-tunes a Model Garden task model from its init_checkpoint and saves it like MG's trainer.

  The trainer checkpoints `model`, `optimizer` and `global_step` at the root and writes
  params.yaml; so does this.

  Args:
    task: a Model Garden `Task` whose config names the pretraining run in `init_checkpoint`.
    model_dir: output directory.
    batch: one batch of features and labels, reused for every step.
    steps: SGD steps.

  Returns:
    The fine-tuned Keras model.
  """
  model = task.build_model()
  task.initialize(model)
  optimizer = tf_keras.optimizers.SGD(learning_rate=0.1)
  for _ in range(steps):
    task.train_step(batch, model, optimizer, metrics=task.build_metrics())
  tf.train.Checkpoint(model=model, optimizer=optimizer,
                      global_step=tf.Variable(steps, dtype=tf.int64)).save(
                          os.path.join(model_dir, 'ckpt'))
  train_utils.serialize_config(cfg.ExperimentConfig(task=task.task_config), model_dir)
  return model


def tokenize(texts):
  """Project tokenizer ids (uncased sample vocabulary), one list per text."""
  tokenizer = tokenization.build_tokenizer(VOCAB, lower_case=True)
  return tokenizer.tokenize(tf.constant(texts)).merge_dims(1, -1).to_list()


def pack(segments, seq_length, truncator):
  """[CLS] a [SEP] (b [SEP]) as NumPy int32 [T] arrays; a reference for Model Garden's packing.

  Args:
    segments: one or two lists of token ids.
    seq_length: T.
    truncator: 'round_robin' (one token per segment in turn) or 'waterfall' (first segment
      first) to fit T - (segments + 1) tokens.

  Returns:
    Dict of input_word_ids, input_mask, input_type_ids, each int32 [T].
  """
  budget = seq_length - len(segments) - 1
  keep = [0] * len(segments)
  if truncator == 'waterfall':
    for i, segment in enumerate(segments):
      keep[i] = min(len(segment), budget - sum(keep))
  else:
    while budget > sum(keep) and any(k < len(s) for k, s in zip(keep, segments)):
      for i, segment in enumerate(segments):
        if budget > sum(keep) and keep[i] < len(segment):
          keep[i] += 1
  ids, types = [VOCAB.cls_id], [0]
  for i, segment in enumerate(segments):
    ids += list(segment[:keep[i]]) + [VOCAB.sep_id]
    types += [i] * (keep[i] + 1)
  pad = seq_length - len(ids)
  return dict(input_word_ids=np.array(ids + [VOCAB.pad_id] * pad, np.int32),
              input_mask=np.array([1] * len(ids) + [0] * pad, np.int32),
              input_type_ids=np.array(types + [0] * pad, np.int32))


def stack(examples):
  """List of `pack` dicts -> dict of [B, T] arrays."""
  return {key: np.stack([e[key] for e in examples]) for key in examples[0]}


_PRELUDE = '''
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # Registers the tokenizer ops the SavedModels use.

with open(sys.argv[1], encoding='utf-8') as f:
  inputs = json.load(f)

def to_py(tensor):
  array = tensor.numpy()
  if array.dtype == object:
    return np.vectorize(lambda b: b.decode('utf-8'), otypes=[object])(array).tolist()
  return array.tolist()

outputs = {}
'''
_EPILOGUE = '''
# The SavedModels must be self-contained: nothing from this repository may have been imported.
outputs['imported_project_modules'] = sorted(
    name for name in sys.modules if name.split('.')[0] in ('teams_tf', 'tests'))
with open(sys.argv[2], 'w', encoding='utf-8') as f:
  json.dump(outputs, f)
'''


def run_in_fresh_process(body, inputs, work_dir):
  """Runs `body` in a new Python process, as a serving system would load the SavedModels.

  Args:
    body: Python code run after a prelude that defines `inputs` (the JSON-decoded `inputs`),
      `to_py(tensor)` (nested lists, strings decoded) and an `outputs` dict to fill.
    inputs: JSON-serializable dict.
    work_dir: directory for the exchange files and the process's working directory.

  Returns:
    The `outputs` dict, JSON round-tripped, plus `imported_project_modules`: the teams_tf or
    tests modules the process imported (should be none).
  """
  in_path = os.path.join(work_dir, 'inputs.json')
  out_path = os.path.join(work_dir, 'outputs.json')
  with open(in_path, 'w', encoding='utf-8') as f:
    json.dump(inputs, f)
  result = subprocess.run(
      [sys.executable, '-c', _PRELUDE + body + _EPILOGUE, in_path, out_path], cwd=work_dir,
      capture_output=True, text=True, timeout=300, check=False)
  if result.returncode:
    raise AssertionError(f'SavedModel process failed:\n{result.stderr[-4000:]}')
  with open(out_path, encoding='utf-8') as f:
    return json.load(f)
