"""BERT-MLM pretraining Task, the TEAMS paper's BERT baseline: the loss of Eq. (1) alone."""

import dataclasses

from official.core import task_factory

from teams_tf.configs import models as model_configs
from teams_tf.models import mlm_pretrainer
from teams_tf.tasks import pretrain_base
from teams_tf.training import experiment_flops


@dataclasses.dataclass
class MlmPretrainTaskConfig(pretrain_base.PretrainTaskConfig):
  """BERT-MLM pretraining task: model (data from PretrainTaskConfig)."""
  model: model_configs.MlmConfig = dataclasses.field(default_factory=model_configs.MlmConfig)


experiment_flops.register(model_configs.MlmConfig, mlm_pretrainer.flop_shapes)


@task_factory.register_task_cls(MlmPretrainTaskConfig)
class MlmPretrainTask(pretrain_base.PretrainTask):
  """One encoder, masked language modelling only: L = L_MLM (Eq. 1); no next-sentence task."""

  def build_pretrainer(self):
    return mlm_pretrainer.build_mlm_pretrainer(self.task_config.model)

  def term_weights(self):
    return {'mlm_loss': 1.0}

  def loss_terms(self, labels, model_outputs):
    return {'mlm_loss': self.mlm_loss(labels, model_outputs)}
