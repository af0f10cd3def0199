"""Registered pretraining experiments (`exp_factory` names) with the TEAMS paper's settings.

`<objective>_small`, `<objective>_base`, `<objective>_large` follow Table 5 (architecture,
optimiser, batch size, steps; sequence length 512, §4.1) for every objective: `teams_*` is TEAMS
(Eq. 9) and `bert_*` the paper's BERT baseline (MLM only, Table 1), so the runs are
compute-matched. Their default data is the embedded sample so that any experiment builds and
starts anywhere; point `task.train_data.input_path` (and `vocab_file` +
`task.model.encoder.vocab_size`) at a real corpus for a paper-scale run. `<objective>_demo` is a
tiny model on the embedded sample that trains in minutes on a laptop CPU.
"""

from official.core import config_definitions as cfg
from official.core import exp_factory

from teams_tf.configs import encoders
from teams_tf.configs import models
from teams_tf.configs import optimization
from teams_tf.data import embedded
from teams_tf.data import pretrain_dataloader
from teams_tf.data import tokenization
from teams_tf.tasks import mlm_task
from teams_tf.tasks import teams_task

# Experiment-name prefix: (task config class, model config class). Only the encoder is set per
# size; every other model field keeps the paper default of its dataclass.
_OBJECTIVES = {
    'teams': (teams_task.TeamsPretrainTaskConfig, models.TeamsConfig),
    'bert': (mlm_task.MlmPretrainTaskConfig, models.MlmConfig),
}

# Table 5 optimisation values per size: (learning rate, batch size, train steps).
_TABLE5_OPTIMIZATION = {
    'small': (5e-4, 256, 500_000),
    'base': (2e-4, 256, 1_000_000),
    'large': (2e-4, 2048, 1_760_000),
}
_TABLE5_WARMUP_STEPS = 10_000


def _data(input_path, is_training, seq_length, batch_size):
  """Raw-text data config, 15% masking with BERT's 80/10/10 replacement (Appendix B)."""
  return pretrain_dataloader.PretrainDataConfig(
      input_path=input_path,
      is_training=is_training,
      seq_length=seq_length,
      max_predictions_per_seq=round(0.15 * seq_length),
      global_batch_size=batch_size,
      seed=1 if not is_training else None)


def _experiment(objective, encoder, learning_rate, batch_size, train_steps, warmup_steps,
                seq_length, eval_batch_size, trainer_overrides):
  """Pretraining experiment of an `_OBJECTIVES` key over the embedded sample data."""
  task_config_cls, model_config_cls = _OBJECTIVES[objective]
  return cfg.ExperimentConfig(
      task=task_config_cls(
          model=model_config_cls(encoder=encoder),
          train_data=_data('sample:train', True, seq_length, batch_size),
          validation_data=_data('sample:valid', False, seq_length, eval_batch_size)),
      trainer=cfg.TrainerConfig(
          train_steps=train_steps,
          optimizer_config=optimization.adamw_linear_decay(
              learning_rate, train_steps, warmup_steps),
          **trainer_overrides),
      restrictions=[
          'task.train_data.is_training != None',
          'task.validation_data.is_training != None',
      ])


def _sample_vocab_size():
  return tokenization.load_vocabulary(embedded.resolve_path('sample:vocab')).size


def paper_size(objective, size):
  """`<objective>_<size>`: Table 5 / §4.1 settings, sequence length 512."""
  learning_rate, batch_size, train_steps = _TABLE5_OPTIMIZATION[size]
  return _experiment(
      objective=objective,
      encoder=encoders.encoder_config(size, vocab_size=_sample_vocab_size()),
      learning_rate=learning_rate,
      batch_size=batch_size,
      train_steps=train_steps,
      warmup_steps=_TABLE5_WARMUP_STEPS,
      seq_length=512,
      eval_batch_size=batch_size,
      trainer_overrides=dict(
          steps_per_loop=1000, summary_interval=1000, checkpoint_interval=10_000,
          validation_interval=10_000, validation_steps=100))


def demo(objective):
  """`<objective>_demo`: tiny model on the embedded sample; minutes on 2 CPU cores, loss falls."""
  return _experiment(
      objective=objective,
      encoder=encoders.encoder_config(
          'tiny', vocab_size=_sample_vocab_size(), max_position_embeddings=128),
      learning_rate=1e-3,
      batch_size=32,
      train_steps=400,
      warmup_steps=40,
      seq_length=128,
      eval_batch_size=32,
      trainer_overrides=dict(
          steps_per_loop=50, summary_interval=50, checkpoint_interval=100,
          validation_interval=200, validation_steps=-1, max_to_keep=3))


for _objective in _OBJECTIVES:
  for _size in _TABLE5_OPTIMIZATION:
    exp_factory.register_config_factory(f'{_objective}_{_size}')(
        lambda objective=_objective, size=_size: paper_size(objective, size))
  exp_factory.register_config_factory(f'{_objective}_demo')(
      lambda objective=_objective: demo(objective))


def experiment_names():
  """Names of the experiments this package registers, sorted."""
  registered = exp_factory._REGISTERED_CONFIGS  # pylint: disable=protected-access
  return sorted(name for name, factory in registered.items()
                if factory.__module__.startswith('teams_tf.'))


def yaml_path(name):
  """Path of an experiment's YAML mirror under `experiments/`."""
  kind = 'finetuning' if name.startswith(('glue_', 'squad_')) else 'pretraining'
  return f'{kind}/{name}.yaml'
