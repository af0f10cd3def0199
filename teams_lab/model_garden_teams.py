r"""Model Garden's own TEAMS (`official/projects/teams`) at a teams_tf recipe: a time-to-accuracy
peer.

`params` is the ExperimentConfig its trainer runs: `TeamsPretrainTask` and `TeamsPretrainer` at
the recipe's shapes (`model_garden_peers.official_teams_config`), Model Garden's BERT record
loader on statically masked records, the recipe's optimiser, batch, steps and checkpoints.
`restored_model` builds that model again and restores a checkpoint to score it.

  python -m teams_lab.model_garden_teams --experiment=teams/pretraining --mode=train \
      --model_dir=... --config_file=...

trains it as `official/projects/teams/train.py` does, except for one patch: that driver imports
`teams_experiments`, whose `TeamsOptimizationConfig` fails to import on Python 3.11 (a dataclass
field with a mutable default, `OptimizerConfig(...)`), only to register `teams/pretraining`. This
module registers that experiment itself from the same task config; the run's --config_file sets
every field (optimiser included), so nothing of the broken module is needed.
"""

from absl import app

from official.common import flags as tfm_flags
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.nlp import train
from official.nlp.data import pretrain_dataloader
from official.projects.teams import teams_task  # Registers TeamsPretrainTask.

from teams_lab import model_garden_mlm
from teams_lab import model_garden_peers
from teams_tf.configs import models as model_configs

EXPERIMENT = 'teams/pretraining'
# What Model Garden's TEAMS cannot set as the teams_tf recipe does.
UNMATCHED = (
    'post-LN blocks (its EncoderScaffold of layers.Transformer has no pre-LN option; the recipe '
    'is pre-LN)',
    'absolute positions only (no T5 relative position bias)',
    'static masks: the records masked anew for each epoch (time_to_accuracy_data.masked_epochs)',
)


def _register_experiment():
  """Registers `EXPERIMENT` as teams_experiments would, without importing it (Python 3.11)."""
  try:
    exp_factory.get_exp_config(EXPERIMENT)
    return
  except LookupError:
    pass

  @exp_factory.register_config_factory(EXPERIMENT)
  def teams_pretrain() -> cfg.ExperimentConfig:
    return cfg.ExperimentConfig(
        task=teams_task.TeamsPretrainTaskConfig(
            train_data=pretrain_dataloader.BertPretrainDataConfig(),
            validation_data=pretrain_dataloader.BertPretrainDataConfig(is_training=False)),
        trainer=cfg.TrainerConfig(),
        restrictions=['task.train_data.is_training != None',
                      'task.validation_data.is_training != None'])
  del teams_pretrain


def params(run):
  """Model Garden's TEAMS at the recipe of `run` (`time_to_accuracy.Settings`, `model` set).

  Raises:
    ValueError: a recipe Model Garden's TEAMS cannot express (`official_teams_config`).
  """
  model = model_configs.TeamsConfig()
  model.override(run.model, is_strict=True)
  config = cfg.ExperimentConfig(
      task=teams_task.TeamsPretrainTaskConfig(
          model=model_garden_peers.official_teams_config(model),
          train_data=model_garden_mlm.data_config(run, is_training=True),
          # Unread in --mode=train; set so that the restrictions hold.
          validation_data=model_garden_mlm.data_config(run, is_training=False)),
      trainer=model_garden_mlm.trainer_config(run))
  return config


def restored_model(run, checkpoint: str):
  """The `TeamsPretrainer` of `params(run)` with the weights of checkpoint prefix `checkpoint`.

  Raises:
    ValueError: the checkpoint does not hold that model.
  """
  return model_garden_mlm.restored_task_model(params(run).task, run.seq_length, checkpoint,
                                              "Model Garden's TEAMS pretrainer")


def main():
  """`official/projects/teams/train.py` with `EXPERIMENT` registered here."""
  _register_experiment()
  tfm_flags.define_flags()
  app.run(train.main)


if __name__ == '__main__':
  main()
