"""Plumbing shared by every pretraining Task: inputs, config checks, weighted loss terms.

Each objective's Task subclasses `PretrainTask` and adds only build_model, its named loss terms
with their weights, and any metrics beyond one mean per loss term. Training and validation steps
are Model Garden's `base_task.Task` ones (replica loss scaling, LossScaleOptimizer handling).
"""

import dataclasses

from absl import logging
import tensorflow as tf
import tf_keras

from official.core import base_task
from official.core import config_definitions as cfg

from teams_tf.data import embedded
from teams_tf.data import pretrain_dataloader
from teams_tf.data import tokenization
from teams_tf.layers import fused_layers
from teams_tf.losses import classification
from teams_tf.tasks import init_checkpoint
from teams_tf.tasks import mlm_baseline
from teams_tf.training import non_finite


@dataclasses.dataclass
class PretrainTaskConfig(cfg.TaskConfig):
  """Pretraining data of every objective; subclasses add their `model` config."""
  train_data: pretrain_dataloader.PretrainDataConfig = dataclasses.field(
      default_factory=pretrain_dataloader.PretrainDataConfig)
  validation_data: pretrain_dataloader.PretrainDataConfig = dataclasses.field(
      default_factory=pretrain_dataloader.PretrainDataConfig)
  # What the inherited `init_checkpoint` (a pretraining checkpoint or run directory) restores when
  # a run starts without a checkpoint of its own: 'encoder', 'encoder,generator' or 'all'
  # (`tasks/init_checkpoint.py`).
  init_checkpoint_modules: str = 'encoder'
  # Run dropout, layer normalization and the tanh GELU of the model as one XLA kernel per pass
  # (`layers/fused_layers.py`): the same math, fewer memory passes (ELECTRA-small bf16 on CPU:
  # `benchmarks/pretrain_throughput.md`). Affects training and validation only; models built for
  # serving or scoring keep plain TensorFlow ops.
  fuse_elementwise_ops: bool = True

# Where `build_losses` leaves its loss terms for `process_metrics` in the model outputs.
_LOSS_TERMS = '_loss_terms'


def _create_layers(model, data):
  """Creates every layer of `model` by tracing one training call on `data`'s shapes.

  Model Garden's transformer blocks and heads create their sublayers when first called; tracing
  (nothing runs, no seed stream advances) makes them exist before `fused_layers.fuse`.
  """
  words = tf.TensorSpec([1, data.seq_length], tf.int32)
  predictions = tf.TensorSpec([1, data.max_predictions_per_seq], tf.int32)
  features = dict(input_word_ids=words, input_mask=words, input_type_ids=words,
                  masked_lm_positions=predictions, masked_lm_ids=predictions,
                  masked_lm_weights=tf.TensorSpec(predictions.shape, tf.float32))
  tf.function(lambda inputs: model(inputs, training=True)).get_concrete_function(features)


class PretrainTask(base_task.Task):
  """Base for pretraining tasks whose model config has an `encoder` (BertEncoderConfig)."""

  def __init__(self, params, logging_dir=None, name=None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    self._vocabularies = {}
    self._check_data_fits_encoder()
    if params.init_checkpoint_modules not in init_checkpoint.MODULES:
      raise ValueError(f'task.init_checkpoint_modules={params.init_checkpoint_modules!r} is not '
                       f'one of {init_checkpoint.MODULES}.')

  def vocabulary(self, field):
    """`task_config.<field>`'s vocabulary ('train_data' or 'validation_data'), read once."""
    if field not in self._vocabularies:
      path = embedded.resolve_path(getattr(self.task_config, field).vocab_file)
      self._vocabularies[field] = tokenization.load_vocabulary(path)
    return self._vocabularies[field]

  def _check_data_fits_encoder(self):
    """Fails early, naming the fields, when data, encoder and replicas disagree on sizes."""
    encoder = self.task_config.model.encoder
    encoder_vocab_size = encoder.vocab_size
    # The task is built in the strategy's scope (train.py), so this is the training strategy.
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    for field in ('train_data', 'validation_data'):
      data = getattr(self.task_config, field)
      if not data.input_path:
        continue
      if data.global_batch_size % replicas:
        raise ValueError(
            f'task.{field}.global_batch_size={data.global_batch_size} is not divisible by the '
            f'{replicas} replicas in sync; use a multiple of {replicas} so every replica gets an '
            'equal share.')
      if data.seq_length > encoder.max_position_embeddings:
        raise ValueError(
            f'task.{field}.seq_length={data.seq_length} exceeds '
            f'task.model.encoder.max_position_embeddings={encoder.max_position_embeddings}; '
            'shorten the sequences or enlarge the position table.')
      vocab = self.vocabulary(field)
      if vocab.size != encoder_vocab_size:
        raise ValueError(
            f'task.model.encoder.vocab_size={encoder_vocab_size} but task.{field}.vocab_file '
            f'{data.vocab_file!r} has {vocab.size} tokens; set '
            f'--params_override=task.model.encoder.vocab_size={vocab.size} (or use the '
            'vocabulary the model was built for).')

  def build_pretrainer(self):
    """The objective's Keras pretrainer, built from `task_config.model`.

    Its builder is the one place that checks the model config (ValueError naming the field);
    `teams_tf.train` builds the model before it writes anything to the model_dir.
    """
    raise NotImplementedError

  def build_model(self):
    """`build_pretrainer()`, its elementwise layers fused when `fuse_elementwise_ops`."""
    model = self.build_pretrainer()
    if self.task_config.fuse_elementwise_ops:
      _create_layers(model, self.task_config.train_data)
      counts = fused_layers.fuse(model)
      logging.info('Fused into one XLA kernel per pass: %s (task.fuse_elementwise_ops).',
                   ', '.join(f'{count} {kind}' for kind, count in counts.items()))
    return model

  def initialize(self, model):
    """Restores `init_checkpoint_modules` from `init_checkpoint` (called for a fresh run only).

    The model is first called on one training example so every variable exists and its shape
    can be checked against the checkpoint.
    """
    config = self.task_config
    if not config.init_checkpoint:
      return
    with model.distribute_strategy.scope():
      batch = next(iter(self.build_inputs(config.train_data)))
      model(tf.nest.map_structure(lambda feature: feature[:1], batch), training=False)
    prefix = init_checkpoint.restore(model, config.init_checkpoint,
                                     config.init_checkpoint_modules)
    logging.info('Started from %s of %s (task.init_checkpoint_modules).',
                 config.init_checkpoint_modules, prefix)

  def build_inputs(self, params, input_context=None):
    """Masked pretraining batches; see `pretrain_dataloader.PretrainDataLoader` for the spec."""
    return pretrain_dataloader.PretrainDataLoader(params).load(input_context)

  def term_weights(self):
    """Dict from every loss-term name of the objective to its configured weight."""
    raise NotImplementedError

  def loss_weights(self):
    """`term_weights` without the zero-weight terms, which are neither computed nor reported."""
    return {name: weight for name, weight in self.term_weights().items() if weight}

  def loss_terms(self, labels, model_outputs):
    """Dict from loss-term name (the keys of `loss_weights`) to a float32 scalar."""
    raise NotImplementedError

  def mlm_targets(self, labels, model_outputs):
    """(ids [B, P] int32, logits [B, P, V], weights [B, P] float32) of the MLM term.

    The batch's masked positions; an objective that predicts elsewhere (TACO's MLM+TP) returns its
    own. `mlm_accuracy` reads the same three.
    """
    return labels['masked_lm_ids'], model_outputs['mlm_logits'], labels['masked_lm_weights']

  def mlm_loss(self, labels, model_outputs):
    """L_MLM (BERT Eq. 1) over `mlm_targets`: float32 mean over the weighted positions."""
    ids, logits, weights = self.mlm_targets(labels, model_outputs)
    return classification.masked_lm_loss(logits, ids, weights)

  def task_metrics(self):
    """Metrics beyond one mean per loss term and the MLM accuracy (AUC, ...); default none."""
    return []

  def update_task_metrics(self, metrics, labels, model_outputs):
    """Updates the `task_metrics`, given as a dict by name."""
    del metrics, labels, model_outputs

  def build_losses(self, labels, model_outputs, aux_losses=None):
    """Weighted sum of the loss terms plus any Keras regularization losses, float32 scalar.

    The terms are also kept in `model_outputs` (a dict) under `_LOSS_TERMS`: Model Garden's
    train and validation steps pass the same outputs to `process_metrics` next, which reports
    those tensors instead of building every loss a second time.
    """
    weights = self.loss_weights()
    terms = self.loss_terms(labels, model_outputs)
    model_outputs[_LOSS_TERMS] = terms
    total = tf.add_n([weights[name] * value for name, value in terms.items()])
    if aux_losses:
      total += tf.add_n(aux_losses)
    return total

  def build_metrics(self, training=None):
    """One mean per loss term, the MLM accuracy, the task's metrics, and evaluation baselines.

    Every objective with an `mlm_loss` reports `mlm_accuracy` (over `mlm_targets`). Beside it,
    evaluation (`training=False`, as Model Garden's trainer asks for its
    evaluation metrics) reports `mlm_context_free_accuracy`
    (`mlm_baseline.ContextFreeMlmAccuracy`): frequency guessing plus copying, the plateau a model
    that does not read context stays on.
    """
    metrics = [tf_keras.metrics.Mean(name=name) for name in self.loss_weights()]
    if training:
      metrics.append(non_finite.FirstNonFiniteStep())
    if 'mlm_loss' in self.loss_weights():
      metrics.append(tf_keras.metrics.SparseCategoricalAccuracy(name='mlm_accuracy'))
    metrics += self.task_metrics()
    if training is False and any(metric.name == 'mlm_accuracy' for metric in metrics):
      vocab = self.vocabulary('validation_data')
      metrics.append(mlm_baseline.ContextFreeMlmAccuracy(vocab.size, vocab.mask_id))
    return metrics

  def train_step(self, inputs, model, optimizer, metrics=None):
    """Model Garden's step, then records the step number if the loss was not finite."""
    logs = super().train_step(inputs, model, optimizer, metrics=metrics)
    for metric in metrics or ():
      if isinstance(metric, non_finite.FirstNonFiniteStep):
        metric.update_state(logs[self.loss], optimizer.iterations)
    return logs

  def process_metrics(self, metrics, labels, model_outputs):
    metrics = {metric.name: metric for metric in metrics}
    terms = model_outputs.get(_LOSS_TERMS) or self.loss_terms(labels, model_outputs)
    for name, value in terms.items():
      metrics[name].update_state(value)
    if 'mlm_accuracy' in metrics:
      ids, logits, weights = self.mlm_targets(labels, model_outputs)
      metrics['mlm_accuracy'].update_state(ids, tf.cast(logits, tf.float32), weights)
    self.update_task_metrics(metrics, labels, model_outputs)
    if 'mlm_context_free_accuracy' in metrics:
      metrics['mlm_context_free_accuracy'].update_state(
          labels['input_word_ids'], labels['masked_lm_positions'], labels['masked_lm_ids'],
          labels['masked_lm_weights'])
