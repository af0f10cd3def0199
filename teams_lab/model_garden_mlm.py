"""Model Garden's own BERT pretraining at a teams_tf recipe, the time-to-accuracy benchmark's peer.

`params` is the ExperimentConfig that `python -m official.nlp.train
--experiment=bert/pretraining --config_file=...` trains: Model Garden's `masked_lm` task and
`BertPretrainerV2` over its `BertEncoderV2` at the recipe's shape, its BERT record loader on
statically masked records, its trainer, with the recipe's optimiser, batch, steps and
checkpoints. `restored_model` builds that model again and restores a checkpoint to score it.
"""

import numpy as np
import tensorflow as tf

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
from official.modeling import optimization
from official.nlp.configs import bert
from official.nlp.configs import encoders
from official.nlp.configs import pretraining_experiments  # noqa: F401  (registers EXPERIMENT)
from official.nlp.data import pretrain_dataloader

EXPERIMENT = 'bert/pretraining'
# What Model Garden's BERT pretraining cannot set as the teams_tf recipe does.
UNMATCHED = (
    'absolute positions only (BertEncoderV2 has no T5 relative position bias)',
    'no final LayerNorm after the pre-LN blocks (BertEncoderV2 with norm_first has none)',
    'static masks: the records masked anew for each epoch (time_to_accuracy_data.masked_epochs)',
)
# A CheckpointManager bound no run reaches, so that every checkpoint is kept and scored (the
# teams_tf runs of the benchmark keep theirs by it too).
KEEP_EVERY_CHECKPOINT = 1_000_000


def data_config(run, is_training: bool):
  """Model Garden's BERT record loader at the batch, T and P of `run` (`time_to_accuracy.Settings`).
  """
  return pretrain_dataloader.BertPretrainDataConfig(
      input_path=run.train_input, global_batch_size=run.batch_size, seq_length=run.seq_length,
      max_predictions_per_seq=run.max_predictions, use_next_sentence_label=False,
      is_training=is_training, seed=run.seed)


def trainer_config(run):
  """Model Garden's trainer at the steps, checkpoints, loops and optimiser of `run`."""
  return cfg.TrainerConfig(
      train_steps=run.train_steps, checkpoint_interval=run.checkpoint_interval,
      max_to_keep=KEEP_EVERY_CHECKPOINT, steps_per_loop=run.summary_interval,
      summary_interval=run.summary_interval, validation_interval=run.train_steps,
      optimizer_config=optimization.OptimizationConfig(run.optimizer_config))


def params(run):
  """Model Garden's `bert/pretraining` at the recipe of `run` (`time_to_accuracy.Settings`)."""
  config = exp_factory.get_exp_config(EXPERIMENT)
  config.task.model = bert.PretrainerConfig(
      encoder=encoders.EncoderConfig(type='bert', bert=encoders.BertEncoderConfig(**run.encoder)),
      cls_heads=[])
  config.task.train_data = data_config(run, is_training=True)
  # Unread in --mode=train; set so that the config's restrictions hold.
  config.task.validation_data = data_config(run, is_training=False)
  config.trainer = trainer_config(run)
  return config


def restored_task_model(task_config, seq_length: int, checkpoint: str, what: str):
  """The model of a Model Garden pretraining task config, restored from checkpoint root `model`.

  Raises:
    ValueError: the checkpoint does not hold that model (`what` names it in the message).
  """
  model = task_factory.get_task(task_config).build_model()
  ones = np.ones([1, seq_length], np.int32)
  model(dict(input_word_ids=ones, input_mask=ones, input_type_ids=0 * ones,
             masked_lm_positions=ones[:, :1], masked_lm_ids=ones[:, :1],
             masked_lm_weights=np.ones([1, 1], np.float32)))
  try:
    tf.train.Checkpoint(model=model).read(checkpoint).expect_partial(
    ).assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    raise ValueError(f'{checkpoint} does not hold {what} of this run: '
                     f'{" ".join(str(e).split())[:500]}') from e
  return model


def restored_model(run, checkpoint: str):
  """The `BertPretrainerV2` of `params(run)` with the weights of checkpoint prefix `checkpoint`.

  Raises:
    ValueError: the checkpoint does not hold that model.
  """
  return restored_task_model(params(run).task, run.seq_length, checkpoint,
                             "Model Garden's BERT pretrainer")
