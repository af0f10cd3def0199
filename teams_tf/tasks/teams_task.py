"""TEAMS pretraining Task (also ELECTRA and MWS-only): total loss of Eq. (9) and its metrics."""

import dataclasses

import tensorflow as tf
import tf_keras

from official.core import task_factory

from teams_tf.configs import models as model_configs
from teams_tf.data import tokenization
from teams_tf.losses import classification
from teams_tf.losses import mws
from teams_tf.models import teams_pretrainer
from teams_tf.ops import token_sampling
from teams_tf.tasks import mws_baseline
from teams_tf.tasks import pretrain_base
from teams_tf.tasks import rtd_baseline
from teams_tf.training import experiment_flops


@dataclasses.dataclass
class TeamsPretrainTaskConfig(pretrain_base.PretrainTaskConfig):
  """TEAMS pretraining task: model (data from PretrainTaskConfig)."""
  model: model_configs.TeamsConfig = dataclasses.field(default_factory=model_configs.TeamsConfig)


def loss_terms(labels, outputs, rtd_weights=None):
  """The unweighted losses of Eq. (9) whose heads the model has.

  Args:
    labels: input batch (see `TeamsPretrainer`); uses `masked_lm_ids`, `masked_lm_weights`,
      `input_mask`. MWS is over the corrupted positions (`corrupted_weights`).
    outputs: `TeamsPretrainer` outputs.
    rtd_weights: [B, T] weights of the RTD average; None = `input_mask` (every non-padding
      token, Eq. 4).

  Returns:
    Dict of float32 scalars: `mlm_loss` (Eq. 1); `rtd_loss` (Eq. 4) if the outputs have
    `rtd_logits`; `mws_loss` (Eq. 8) if they have `mws_logits`.
  """
  weights = labels['masked_lm_weights']
  terms = dict(mlm_loss=classification.masked_lm_loss(
      outputs['mlm_logits'], labels['masked_lm_ids'], weights))
  if 'rtd_logits' in outputs:
    terms['rtd_loss'] = classification.rtd_loss(
        outputs['rtd_logits'], outputs['rtd_labels'],
        labels['input_mask'] if rtd_weights is None else rtd_weights)
  if 'mws_logits' in outputs:
    terms['mws_loss'] = mws.mws_loss(outputs['mws_logits'], outputs['corrupted_weights'])
  return terms


experiment_flops.register(model_configs.TeamsConfig, teams_pretrainer.flop_shapes)


@task_factory.register_task_cls(TeamsPretrainTaskConfig)
class TeamsPretrainTask(pretrain_base.PretrainTask):
  """Generator MLM + discriminator RTD + MWS, L = L_MLM + λ1·L_RTD + λ2·L_MWS (Eq. 9).

  ELECTRA is λ2 = 0 (Eq. 1 + λ·Eq. 4) and "Only MWS" λ1 = 0; a zero-weight term is not
  computed, logged or built.
  """

  def __init__(self, params, logging_dir=None, name=None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    self._text_vocab = None
    if params.model.rtd_loss_positions == 'text':
      # Batches of train_data and validation_data share these ids: both vocabularies were checked
      # against the encoder, and the records are written with one vocabulary.
      self._text_vocab = self.vocabulary('train_data')

  def build_pretrainer(self):
    return teams_pretrainer.build_teams_pretrainer(self.task_config.model)

  def term_weights(self):
    """Eq. (9): 1 for the generator's MLM, λ1 for RTD, λ2 for MWS."""
    config = self.task_config.model
    return {'mlm_loss': 1.0, 'rtd_loss': config.rtd_loss_weight,
            'mws_loss': config.mws_loss_weight}

  def rtd_weights(self, labels):
    """[B, T] positions of the RTD loss and metrics (`rtd_loss_positions`)."""
    if self._text_vocab is None:
      return labels['input_mask']
    # x^M holds [MASK] or a token at masked positions, never [CLS] or [SEP], so the text's tokens
    # are found in the input as in the original.
    return tokenization.text_token_weights(
        labels['input_word_ids'], labels['input_mask'], self._text_vocab)

  def loss_terms(self, labels, model_outputs):
    return loss_terms(labels, model_outputs, self.rtd_weights(labels))

  def task_metrics(self):
    weights = self.loss_weights()
    metrics = [
        # Share of masked positions whose token in x^R differs from the original.
        tf_keras.metrics.Mean(name='replaced_fraction'),
    ]
    if 'rtd_loss' in weights:
      metrics += [tf_keras.metrics.BinaryAccuracy(name='rtd_accuracy', threshold=0.0),
                  tf_keras.metrics.AUC(name='rtd_auc', from_logits=True)]
    if 'mws_loss' in weights:
      metrics.append(tf_keras.metrics.SparseCategoricalAccuracy(name='mws_accuracy'))
    return metrics

  def build_metrics(self, training=None):
    """The base metrics; in evaluation also the context-free baselines of RTD and MWS.

    `rtd_context_free_auc` (`rtd_baseline`) and `mws_context_free_accuracy` (`mws_baseline`) tell
    how much of `rtd_auc` and `mws_accuracy` token identity alone gives; both change as the
    generator moves from uniform samples to unigram frequencies.
    """
    metrics = super().build_metrics(training)
    vocab_size = self.task_config.model.encoder.vocab_size
    if training is False and 'rtd_loss' in self.loss_weights():
      metrics.append(rtd_baseline.ContextFreeRtdAuc(vocab_size))
    if training is False and 'mws_loss' in self.loss_weights():
      metrics.append(mws_baseline.ContextFreeMwsAccuracy(vocab_size))
    return metrics

  def update_task_metrics(self, metrics, labels, model_outputs):
    weights = labels['masked_lm_weights']
    rtd_weights = self.rtd_weights(labels)
    replaced = tf.cast(
        tf.not_equal(model_outputs['replaced_ids'], labels['masked_lm_ids']), tf.float32)
    metrics['replaced_fraction'].update_state(replaced, weights)
    if 'rtd_logits' in model_outputs:
      metrics['rtd_accuracy'].update_state(
          model_outputs['rtd_labels'], model_outputs['rtd_logits'], rtd_weights)
      metrics['rtd_auc'].update_state(
          model_outputs['rtd_labels'], model_outputs['rtd_logits'], rtd_weights)
      if 'rtd_context_free_auc' in metrics:
        _, corrupted = token_sampling.replace_masked_tokens(
            labels['input_word_ids'], labels['masked_lm_positions'], weights,
            labels['masked_lm_ids'], model_outputs['replaced_ids'])
        metrics['rtd_context_free_auc'].update_state(
            corrupted, model_outputs['rtd_labels'], rtd_weights)
    if 'mws_logits' in model_outputs:
      corrupted_weights = model_outputs['corrupted_weights']
      metrics['mws_accuracy'].update_state(
          tf.zeros_like(labels['masked_lm_ids']), model_outputs['mws_logits'], corrupted_weights)
      if 'mws_context_free_accuracy' in metrics:
        metrics['mws_context_free_accuracy'].update_state(model_outputs['candidate_ids'],
                                                          corrupted_weights)
