"""TACO pretraining Task: L_TACO = L_TC + L_MLM (Su et al., 2022, Eq. 11)."""

import dataclasses

import tensorflow as tf

from official.core import task_factory

from teams_tf.configs import models as model_configs
from teams_tf.losses import contrastive
from teams_tf.models import taco_pretrainer
from teams_tf.tasks import pretrain_base
from teams_tf.training import experiment_flops


@dataclasses.dataclass
class TacoPretrainTaskConfig(pretrain_base.PretrainTaskConfig):
  """TACO pretraining task: model (data from PretrainTaskConfig)."""
  model: model_configs.TacoConfig = dataclasses.field(default_factory=model_configs.TacoConfig)


experiment_flops.register(model_configs.TacoConfig, taco_pretrainer.flop_shapes)


@task_factory.register_task_cls(TacoPretrainTaskConfig)
class TacoPretrainTask(pretrain_base.PretrainTask):
  """MLM (Eq. 1) plus the token-alignment contrastive loss (Eq. 6-8) over one forward pass.

  Loss terms (float32 scalars): `mlm_loss` (weight 1) and `tc_loss` (weight `tc_loss_weight`).
  """

  def build_pretrainer(self):
    return taco_pretrainer.build_taco_pretrainer(self.task_config.model)

  def term_weights(self):
    return {'mlm_loss': 1.0, 'tc_loss': self.task_config.model.tc_loss_weight}

  def mlm_targets(self, labels, model_outputs):
    del labels  # The masked positions, or every position for MLM+TP: the model chooses.
    return (model_outputs['mlm_target_ids'], model_outputs['mlm_logits'],
            model_outputs['mlm_weights'])

  def loss_terms(self, labels, model_outputs):
    terms = dict(mlm_loss=self.mlm_loss(labels, model_outputs))
    if 'tc_loss' in self.loss_weights():
      hidden = tf.shape(model_outputs['global_semantics'])[-1]
      num_negatives = tf.shape(model_outputs['tc_negatives'])[2]
      terms['tc_loss'] = contrastive.token_alignment_contrastive_loss(
          tf.reshape(model_outputs['global_semantics'], [-1, hidden]),
          tf.reshape(model_outputs['tc_positives'], [-1, hidden]),
          tf.reshape(model_outputs['tc_negatives'], [-1, num_negatives, hidden]),
          tf.reshape(model_outputs['tc_weights'], [-1]),
          temperature=self.task_config.model.temperature)
    return terms
