"""The experiment config of one GLUE fine-tuning run of a sweep (`sweep.py`).

A run is the registered experiment `glue_<task>_<size>` (TEAMS Table 6 hyper-parameters; at the
paper sizes `..._rel_pos` when the checkpoint's encoder has COCO-LM's relative positions) with,
when the checkpoint's folder holds the params.yaml of its `teams_tf.train` run, that run's kept
encoder (vocabulary, pre-LN, relative positions, depth) in place of the size's. Its data is
`tools/create_glue_data.py`'s `<data_dir>/<task>/{train.tfrecord,dev.tfrecord,meta_data.json}`;
its train steps are the registered experiment's epochs (Table 6: 5) over the converted train set
at its batch size, or `epochs` / `train_steps`; warm-up (10%) and linear decay follow the step
count. `params_override` is applied first; the fields derived here (data paths, init_checkpoint,
seed, sequence length, steps, warm-up, decay) cannot be overridden through it.
"""

import json
import math
import os

from absl import logging
import tensorflow as tf

from official.core import exp_factory
from official.modeling import hyperparams

from teams_tf.registry import finetune_experiments
from teams_tf.training import run_settings
from teams_tf.utils import checkpoint_paths

# Fields the sweep sets from its settings and data; --params_override must not set them.
_MANAGED_FIELDS = (
    'task.init_checkpoint', 'task.train_data.input_path', 'task.validation_data.input_path',
    'task.train_data.seed', 'task.train_data.seq_length', 'task.validation_data.seq_length',
    'trainer.train_steps', 'trainer.optimizer_config.learning_rate.polynomial.decay_steps',
    'trainer.optimizer_config.warmup.linear.warmup_steps')
# Model Garden's validation log key of each `metric_type`: what a held-out slice chooses by.
VALIDATION_METRICS = {'accuracy': 'cls_accuracy', 'matthews_corrcoef': 'matthews_corrcoef',
                      'pearson_spearman_corr': 'pearson_spearman_corr', 'f1': 'f1'}
_LOGS_PER_RUN = 10


def _get(params, dotted):
  value = params
  for key in dotted.split('.'):
    value = getattr(value, key)
  return value


def experiment_name(task, size, relative_positions=False):
  """`glue_<task>_<size>`, or `..._rel_pos` for an encoder with relative positions (COCO-LM)."""
  return f'glue_{task}_{size}{"_rel_pos" if relative_positions else ""}'


def check_init_checkpoint(path):
  """Checks `path` is a checkpoint (or a folder with one) holding an `encoder` entry.

  Returns:
    Whether that encoder has a relative position bias (COCO-LM's main Transformer), which
    selects the `*_rel_pos` experiments; False without a checkpoint.
  """
  if not path:
    logging.warning('No --init_checkpoint: fine-tuning from a random initialization.')
    return False
  try:
    checkpoint = checkpoint_paths.resolve_prefix(path)
  except ValueError as e:
    raise ValueError(f'--init_checkpoint={path} is neither a checkpoint prefix nor a folder with '
                     'a checkpoint.') from e
  names = [name for name, _ in tf.train.list_variables(checkpoint)
           if name.startswith('encoder/')]
  if not names:
    raise ValueError(f'{checkpoint} has no `encoder` entry: pass a pretraining checkpoint of '
                     'this project (teams_tf.train writes the kept encoder under `encoder`).')
  relative_positions = any('/position_bias/' in name for name in names)
  if relative_positions:
    logging.info('%s has a relative-position encoder: running glue_<task>_<size>_rel_pos.',
                 checkpoint)
  return relative_positions


def pretraining_encoder(init_checkpoint):
  """The kept encoder's `EncoderConfig` of the `teams_tf.train` run that wrote a checkpoint.

  Read from the run's params.yaml beside the checkpoint (`serving.training_runs`), so that
  fine-tuning builds the encoder that was pretrained (its vocabulary, norm placement, relative
  positions, kept depth) whatever `--size` says; None without a params.yaml.

  Raises:
    ValueError: `init_checkpoint` names no checkpoint (`check_init_checkpoint` runs first and
      says so in the flag's words).
  """
  if not init_checkpoint:
    return None
  checkpoint = checkpoint_paths.resolve_prefix(init_checkpoint)
  params_path = os.path.join(os.path.dirname(checkpoint), 'params.yaml')
  if not tf.io.gfile.exists(params_path):
    return None
  model_values = run_settings.RunSettings(os.path.dirname(checkpoint)).params.get(
      'task', {}).get('model') or {}
  encoder = run_settings.kept_encoder_config(model_values, params_path, checkpoint)
  logging.info('Encoder from %s: %s', params_path, encoder.type)
  return encoder


def build_params(task, size, seed, data_dir, init_checkpoint, train_steps=None, epochs=None,
                 params_override=None, relative_positions=False, encoder=None,
                 select_epoch=False):
  """The experiment config of one run and a one-line description of its step count.

  Starts from `experiment_name(task, size, relative_positions)`, puts in `encoder` (an
  `EncoderConfig`, e.g. `pretraining_encoder`'s) with the experiment's dropout, applies
  `params_override`, then sets data paths, seeds, sequence length (from meta_data.json), train
  steps, warm-up and decay steps, and logging intervals. With `select_epoch`, the run validates
  on the task's held-out train slice (`heldout.tfrecord`) after every epoch and keeps every
  epoch's checkpoint, so that dev is read only at the epoch the slice chooses (`sweep.run_one`).
  Raises ValueError when the data does not fit the experiment.
  """
  name = experiment_name(task, size, relative_positions)
  registered = exp_factory.get_exp_config(name)
  params = exp_factory.get_exp_config(name)
  if encoder is not None:
    encoder = encoder.replace()
    fine_tuning = params.task.model.encoder.get()
    # The architecture is the pretrained one; dropout is a fine-tuning setting (Table 6: 0.1).
    encoder.get().dropout_rate = fine_tuning.dropout_rate
    encoder.get().attention_dropout_rate = fine_tuning.attention_dropout_rate
    params.task.model.encoder = encoder
  hyperparams.override_params_dict(params, params_override, is_strict=True)
  overridden = [field for field in _MANAGED_FIELDS
                if _get(params, field) != _get(registered, field)]
  if overridden:
    raise ValueError(f'--params_override sets {", ".join(overridden)}, which run_glue derives '
                     'from --init_checkpoint, --data_dir, seeds and --train_steps/--epochs.')

  task_dir = os.path.join(data_dir, task)
  meta_path = os.path.join(task_dir, 'meta_data.json')
  if not tf.io.gfile.exists(meta_path):
    raise ValueError(f'{meta_path} is missing: convert the task first with '
                     f'tools/create_glue_data.py --task={task} --output_dir={task_dir}')
  with tf.io.gfile.GFile(meta_path, 'r') as f:
    meta = json.load(f)
  encoder = params.task.model.encoder.get()
  problems = []
  if meta.get('task') != task:
    problems.append(f'it is for task {meta.get("task")!r}')
  if meta['num_labels'] != params.task.model.num_classes:
    problems.append(f'num_labels={meta["num_labels"]} but {name} has '
                    f'num_classes={params.task.model.num_classes}')
  if meta.get('vocab_size', encoder.vocab_size) != encoder.vocab_size:
    problems.append(f'its vocabulary has {meta["vocab_size"]} tokens but the {size} encoder '
                    f'{encoder.vocab_size}')
  if meta['max_seq_length'] > encoder.max_position_embeddings:
    problems.append(f'max_seq_length={meta["max_seq_length"]} exceeds the encoder\'s '
                    f'{encoder.max_position_embeddings} positions')
  if problems:
    raise ValueError(f'{meta_path} does not fit {name}: {"; ".join(problems)}.')

  batch_size = params.task.train_data.global_batch_size
  if train_steps is not None and epochs is not None:
    raise ValueError('Give at most one of --train_steps and --epochs.')
  if train_steps is None:
    if epochs is None:
      # The registered step count is Table 6's epochs over the full GLUE train set.
      epochs = (registered.trainer.train_steps * registered.task.train_data.global_batch_size /
                finetune_experiments.GLUE_TASKS[task].num_train_examples)
    train_steps = max(1, round(epochs * meta['train_data_size'] / batch_size))
    how = (f'{epochs:.3g} epochs x {meta["train_data_size"]} examples / batch {batch_size}')
  else:
    how = f'--train_steps, batch {batch_size}'
  warmup_fraction = (registered.trainer.optimizer_config.warmup.linear.warmup_steps /
                     registered.trainer.train_steps)
  steps_per_loop = max(1, min(1000, math.ceil(train_steps / _LOGS_PER_RUN)))
  interval = min(1000, train_steps)
  validation_file = 'dev.tfrecord'
  if select_epoch:
    if not meta.get('heldout_data_size'):
      raise ValueError(f'{meta_path} has no held-out train slice to choose epochs on: convert '
                       f'the task with tools/create_glue_data.py --heldout_examples=N.')
    interval = min(train_steps, max(1, math.ceil(meta['train_data_size'] / batch_size)))
    # One loop per epoch: the checkpoint manager saves at the end of its first loop and then
    # every `interval` steps, so only then do checkpoints fall on the validated steps.
    steps_per_loop = interval
    validation_file = 'heldout.tfrecord'
    params.override({'trainer': {'max_to_keep': math.ceil(train_steps / interval) + 1}})
  params.override({
      'task': {
          'init_checkpoint': init_checkpoint,
          'train_data': {'input_path': os.path.join(task_dir, 'train.tfrecord'), 'seed': seed,
                         'seq_length': meta['max_seq_length']},
          'validation_data': {'input_path': os.path.join(task_dir, validation_file),
                              'seq_length': meta['max_seq_length']},
      },
      'trainer': {
          'train_steps': train_steps,
          'optimizer_config': {
              'learning_rate': {'polynomial': {'decay_steps': train_steps}},
              'warmup': {'linear': {'warmup_steps': round(warmup_fraction * train_steps)}},
          },
          'steps_per_loop': steps_per_loop,
          'summary_interval': steps_per_loop,
          'checkpoint_interval': interval,
          'validation_interval': interval,
      },
  }, is_strict=True)
  params.validate()
  params.lock()
  return params, meta, f'{train_steps} train steps ({how})'
