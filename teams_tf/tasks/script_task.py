"""SCRIPT pretraining Task: L = L_MLM + α·L_Disc (Nijkamp et al., §2, Eq. 2 and 6)."""

import dataclasses

import tensorflow as tf
import tf_keras

from official.core import task_factory

from teams_tf.configs import models as model_configs
from teams_tf.losses import self_critic
from teams_tf.models import script_pretrainer
from teams_tf.tasks import pretrain_base
from teams_tf.training import experiment_flops


@dataclasses.dataclass
class ScriptPretrainTaskConfig(pretrain_base.PretrainTaskConfig):
  """SCRIPT pretraining task: model (data from PretrainTaskConfig)."""
  model: model_configs.ScriptConfig = dataclasses.field(default_factory=model_configs.ScriptConfig)


experiment_flops.register(model_configs.ScriptConfig, script_pretrainer.flop_shapes)


@task_factory.register_task_cls(ScriptPretrainTaskConfig)
class ScriptPretrainTask(pretrain_base.PretrainTask):
  """MLM on the masked pass, binary self-critic loss on every token of the sampled pass.

  Loss terms (float32 scalars): `mlm_loss` (Eq. 1-2, masked positions, weight 1) and
  `disc_loss` (Eq. 6, all non-padding tokens, weight α).
  """

  def build_pretrainer(self):
    return script_pretrainer.build_script_pretrainer(self.task_config.model)

  def term_weights(self):
    return {'mlm_loss': 1.0, 'disc_loss': self.task_config.model.discriminator_loss_weight}

  def loss_terms(self, labels, model_outputs):
    terms = dict(mlm_loss=self.mlm_loss(labels, model_outputs))
    if 'disc_loss' in self.loss_weights():
      terms['disc_loss'] = self_critic.self_critic_loss(
          model_outputs['critic_log_odds'], model_outputs['critic_labels'], labels['input_mask'])
    return terms

  def task_metrics(self):
    return [
        # Share of masked positions whose sample differs from the original.
        tf_keras.metrics.Mean(name='replaced_fraction'),
        tf_keras.metrics.BinaryAccuracy(name='disc_accuracy', threshold=0.0),
        tf_keras.metrics.AUC(name='disc_auc', from_logits=True),
    ]

  def update_task_metrics(self, metrics, labels, model_outputs):
    weights = labels['masked_lm_weights']
    replaced = tf.not_equal(model_outputs['replaced_ids'], labels['masked_lm_ids'])
    metrics['replaced_fraction'].update_state(tf.cast(replaced, tf.float32), weights)
    for name in ('disc_accuracy', 'disc_auc'):
      metrics[name].update_state(model_outputs['critic_labels'],
                                 model_outputs['critic_log_odds'], labels['input_mask'])
