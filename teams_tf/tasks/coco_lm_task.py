"""COCO-LM pretraining Task: L = L_MLM(aux) + λ_copy·L_copy + L_LM + L_SCL (Eq. 2 and 4)."""

import dataclasses

import tensorflow as tf
import tf_keras

from official.core import task_factory

from teams_tf.configs import models as model_configs
from teams_tf.losses import classification
from teams_tf.losses import clm
from teams_tf.losses import contrastive
from teams_tf.models import coco_lm_pretrainer
from teams_tf.tasks import pretrain_base
from teams_tf.training import experiment_flops


@dataclasses.dataclass
class CocoLmPretrainTaskConfig(pretrain_base.PretrainTaskConfig):
  """COCO-LM pretraining task: model (data from PretrainTaskConfig)."""
  model: model_configs.CocoLmConfig = dataclasses.field(default_factory=model_configs.CocoLmConfig)


experiment_flops.register(model_configs.CocoLmConfig, coco_lm_pretrainer.flop_shapes)


@task_factory.register_task_cls(CocoLmPretrainTaskConfig)
class CocoLmPretrainTask(pretrain_base.PretrainTask):
  """Auxiliary MLM + main CLM + SCL (COCO-LM Eq. 4); a zero-weight term is not computed.

  Loss terms (float32 scalars): `mlm_loss`, the auxiliary MLM (weight 1; absent with random
  replacements); `copy_loss`, L_copy of Eq. (2) over all tokens (weight λ_copy); `lm_loss`, L_LM
  of Eq. (2) (weight `lm_loss_weight`); `scl_loss`, L_SCL of Eq. (3) (weight `scl_loss_weight`).
  """

  def build_pretrainer(self):
    return coco_lm_pretrainer.build_coco_lm_pretrainer(self.task_config.model)

  def term_weights(self):
    config = self.task_config.model
    return {'mlm_loss': float(config.replacement == 'auxiliary'),
            'copy_loss': config.copy_loss_weight, 'lm_loss': config.lm_loss_weight,
            'scl_loss': config.scl_loss_weight}

  def loss_terms(self, labels, model_outputs):
    config = self.task_config.model
    weights = self.loss_weights()
    terms = {}
    if 'mlm_loss' in weights:
      terms['mlm_loss'] = self.mlm_loss(labels, model_outputs)
    if 'copy_loss' in weights:
      terms['copy_loss'] = classification.rtd_loss(
          model_outputs['copy_logits'], model_outputs['copy_labels'], labels['input_mask'])
    if 'lm_loss' in weights:
      terms['lm_loss'] = clm.corrective_lm_loss(
          model_outputs['clm_logits'], model_outputs['lm_copy_logits'],
          model_outputs['lm_target_ids'], model_outputs['lm_input_ids'],
          model_outputs['lm_weights'], copy_mechanism=config.copy_mechanism,
          stop_gradient=config.clm_stop_gradient)
    if 'scl_loss' in weights:
      terms['scl_loss'] = contrastive.sequence_contrastive_loss(
          model_outputs['sequence_embedding'], model_outputs['crop_sequence_embedding'],
          temperature=config.scl_temperature)
    return terms

  def task_metrics(self):
    weights = self.loss_weights()
    metrics = [
        # Share of masked positions whose X^MLM token differs from the original.
        tf_keras.metrics.Mean(name='replaced_fraction'),
        tf_keras.metrics.BinaryAccuracy(name='copy_accuracy', threshold=0.0),
        tf_keras.metrics.AUC(name='copy_auc', from_logits=True),
    ]
    if 'lm_loss' in weights:
      # argmax of p_LM = the original token; on all LM positions and on the replaced ones
      # (COCO-LM Figure 8).
      metrics += [tf_keras.metrics.Mean(name='lm_accuracy'),
                  tf_keras.metrics.Mean(name='lm_replaced_accuracy')]
    if 'scl_loss' in weights:
      # Mean [CLS] cosine of positive and of in-batch negative pairs (COCO-LM Figure 7a).
      metrics += [tf_keras.metrics.Mean(name='scl_positive_cosine'),
                  tf_keras.metrics.Mean(name='scl_negative_cosine')]
    return metrics

  def update_task_metrics(self, metrics, labels, model_outputs):
    weights = labels['masked_lm_weights']
    replaced = tf.not_equal(model_outputs['replaced_ids'], labels['masked_lm_ids'])
    metrics['replaced_fraction'].update_state(tf.cast(replaced, tf.float32), weights)
    for name in ('copy_accuracy', 'copy_auc'):
      metrics[name].update_state(model_outputs['copy_labels'], model_outputs['copy_logits'],
                                 labels['input_mask'])
    if 'lm_accuracy' in metrics:
      self._update_lm_accuracy(metrics, model_outputs)
    if 'scl_positive_cosine' in metrics:
      positive, negative = contrastive.pair_cosine_similarities(
          model_outputs['sequence_embedding'], model_outputs['crop_sequence_embedding'])
      metrics['scl_positive_cosine'].update_state(positive)
      metrics['scl_negative_cosine'].update_state(negative)

  def _update_lm_accuracy(self, metrics, outputs):
    if self.task_config.model.copy_mechanism:
      scores = clm.corrective_lm_log_probs(
          outputs['clm_logits'], outputs['lm_copy_logits'], outputs['lm_input_ids'])
    else:
      scores = outputs['clm_logits']
    correct = tf.cast(tf.equal(tf.argmax(scores, axis=-1, output_type=tf.int32),
                               outputs['lm_target_ids']), tf.float32)
    lm_weights = outputs['lm_weights']
    is_replaced = tf.cast(tf.not_equal(outputs['lm_input_ids'], outputs['lm_target_ids']),
                          tf.float32)
    metrics['lm_accuracy'].update_state(correct, lm_weights)
    metrics['lm_replaced_accuracy'].update_state(correct, lm_weights * is_replaced)
