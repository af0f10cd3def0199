"""Tiny configurations and realistic batches shared by the tests (STYLE.md §8)."""

import contextlib
import os
from typing import Any, Dict, NamedTuple

from absl import flags
import gin
import numpy as np
import tensorflow as tf
import tf_keras

from official.modeling import optimization
from official.nlp.configs import encoders
from official.nlp.modeling import models as garden_models

from teams_tf.configs import models
from teams_tf.data import embedded
from teams_tf.data import pretrain_dataloader
from teams_tf.data import tokenization
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import mlm_pretrainer
from teams_tf.models import script_pretrainer
from teams_tf.models import taco_pretrainer
from teams_tf.models import teams_pretrainer
from teams_tf.registry import experiments
from teams_tf.tasks import teams_task
from teams_tf.training import resume
from teams_tf.utils import onednn

VOCAB_SIZE = 100
SEQ_LENGTH = 16
MAX_SEQ_LENGTH = 32
NUM_PREDICTIONS = 4


# `python -m teams_tf.train` overrides under which a `*_demo` run takes seconds: 2 layers, T 32,
# batch 4, 5 predictions, loops of 2 steps, 1 warmup step.
SMALL_DEMO_RUN = ','.join(
    [f'task.{data}.{key}' for data in ('train_data', 'validation_data')
     for key in ('seq_length=32', 'max_predictions_per_seq=5', 'global_batch_size=4')] +
    ['task.model.encoder.num_layers=2', 'trainer.steps_per_loop=2',
     'trainer.summary_interval=2', 'trainer.optimizer_config.warmup.linear.warmup_steps=1'])


def default_kernels_environment():
  """os.environ as a user's shell has it: without the tests' TF_ENABLE_ONEDNN_OPTS=0 (conftest)."""
  set_by_teams_tf = onednn._MARK  # pylint: disable=protected-access
  return {k: v for k, v in os.environ.items() if k not in (onednn.ENV, set_by_teams_tf)}


def train_error(*argv):
  """The error `python -m teams_tf.train *argv` exits with, from a run in this process.

  `train.main` ends every misuse in `sys.exit('error: ...')`, which Python prints as the last line
  of stderr with status 1 and no traceback; any other exception fails the calling test. In this
  process a case takes seconds, where a subprocess pays TensorFlow's start-up (about 25 s). The
  flags are parsed as from the command line, then reset with gin's bindings and Keras' dtype
  policy (process-wide: a bfloat16 experiment refused for want of a TPU has set it already).
  """
  # Imported here: it defines flags, which only the tests that run it need.
  from teams_tf import train  # pylint: disable=g-import-not-at-top
  if 'experiment' not in flags.FLAGS:
    train.define_flags()
  was_parsed = flags.FLAGS.is_parsed()
  policy = tf_keras.mixed_precision.global_policy()
  try:
    flags.FLAGS.unparse_flags()
    flags.FLAGS(['teams_tf.train', *argv])
    train.main(None)
  except SystemExit as e:
    return str(e.code)
  finally:
    flags.FLAGS.unparse_flags()
    if was_parsed:
      flags.FLAGS.mark_as_parsed()
    gin.clear_config()
    tf_keras.mixed_precision.set_global_policy(policy)
  raise AssertionError(f'python -m teams_tf.train {" ".join(argv)} ended without an error')


@contextlib.contextmanager
def keras_policy(name):
  """Keras' process-wide dtype policy `name` inside the block, the previous one after it."""
  previous = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(previous)


def tiny_encoder_config(num_layers=2, vocab_size=VOCAB_SIZE):
  """2 layers, hidden 32, 2 heads, factorised 16-wide embeddings."""
  return encoders.BertEncoderConfig(
      vocab_size=vocab_size, hidden_size=32, num_layers=num_layers, num_attention_heads=2,
      intermediate_size=64, embedding_size=16, max_position_embeddings=MAX_SEQ_LENGTH,
      dropout_rate=0.0, attention_dropout_rate=0.0)


def tiny_teams_config(**overrides):
  """TEAMS over a 2-layer discriminator with a 2-layer generator sharing its bottom layer."""
  defaults = dict(
      encoder=tiny_encoder_config(), num_generator_layers=2, num_shared_layers=1,
      num_negatives=3)
  defaults.update(overrides)
  return models.TeamsConfig(**defaults)


def tiny_mlm_config():
  """BERT-MLM over the 2-layer tiny encoder."""
  return models.MlmConfig(encoder=tiny_encoder_config())


def sample_vocab_size():
  """Size of the embedded sample vocabulary (`sample:vocab`)."""
  return tokenization.load_vocabulary(embedded.resolve_path('sample:vocab')).size


def sample_data_configs():
  """(train, validation) data configs on the embedded sample: T = 32, P = 5, batch 4, seed 1."""
  data = dict(vocab_file='sample:vocab', seq_length=32, max_predictions_per_seq=5,
              global_batch_size=4, seed=1)
  return (pretrain_dataloader.PretrainDataConfig(input_path='sample:train', is_training=True,
                                                 **data),
          pretrain_dataloader.PretrainDataConfig(input_path='sample:valid', is_training=False,
                                                 **data))


def unreached_variables(task, model, batch):
  """(names of the trainable variables no loss reaches, the loss) of one forward pass on `batch`:
  a head left without a task has no gradient."""
  with tf.GradientTape() as tape:
    loss = task.build_losses(batch, model(batch, training=True))
  gradients = tape.gradient(loss, model.trainable_variables)
  return [v.name for v, g in zip(model.trainable_variables, gradients) if g is None], loss


def sample_task_config(task_config_cls, model_config):
  """A pretraining task config over the embedded sample (see `sample_data_configs`).

  `model_config.encoder` is resized to the sample vocabulary.
  """
  model_config.encoder.vocab_size = sample_vocab_size()
  train_data, validation_data = sample_data_configs()
  return task_config_cls(model=model_config, train_data=train_data,
                         validation_data=validation_data)


def untrained_teams_evaluation(num_batches):
  """An untrained tiny TEAMS evaluated on `num_batches` batches of the sample's validation data.

  Returns:
    (names of its training metrics, {evaluation metric name: value}).
  """
  task = teams_task.TeamsPretrainTask(sample_task_config(
      teams_task.TeamsPretrainTaskConfig, tiny_teams_config(
          encoder=tiny_encoder_config(vocab_size=sample_vocab_size()))))
  metrics = task.build_metrics(training=False)
  model = task.build_model()
  for batch in task.build_inputs(task.task_config.validation_data).take(num_batches):
    task.validation_step(batch, model, metrics=metrics)
  return ([metric.name for metric in task.build_metrics(training=True)],
          {metric.name: float(metric.result()) for metric in metrics})


def two_layer_demo_experiment(objective, dropout=True):
  """`<objective>_demo` with a 2-layer encoder (1 generator layer), optionally without dropout.

  Two layers trace and compile in half the time of the demo's four and still hold every kind of
  layer (shared, generator-only and discriminator-only layers; every head and sampler). Without
  dropout, a step is a deterministic function of the weights and the seed stream (Keras draws
  dropout masks from generators that no seed stream controls).
  """
  params = experiments.pretraining_experiment(objective, 'demo')
  params.task.model.encoder.num_layers = 2
  if getattr(params.task.model, 'num_generator_layers', None):
    params.task.model.num_generator_layers = 1
  if not dropout:
    params.task.model.encoder.dropout_rate = 0.0
    params.task.model.encoder.attention_dropout_rate = 0.0
  return params


def constant_lr_optimizer(learning_rate):
  """Model Garden AdamW with a constant learning rate, for task steps in tests."""
  factory = optimization.OptimizerFactory(optimization.OptimizationConfig({
      'optimizer': {'type': 'adamw'},
      'learning_rate': {'type': 'constant', 'constant': {'learning_rate': learning_rate}},
  }))
  return factory.build_optimizer(factory.build_learning_rate())


class StepReport(NamedTuple):
  """What one training and one validation step of a pretraining Task reported."""
  model: Any
  batch: Dict[str, tf.Tensor]
  train_loss: float
  train_metrics: Dict[str, float]
  validation_loss: float
  validation_metrics: Dict[str, float]


def train_and_validation_step(task, learning_rate=1e-3):
  """One `train_step` on the first training batch, then one `validation_step` (fresh metrics).

  `task` is a pretraining Task whose train and validation data are configured.
  """
  model = task.build_model()
  metrics = task.build_metrics()
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  train_logs = task.train_step(batch, model, constant_lr_optimizer(learning_rate),
                               metrics=metrics)
  train_metrics = {m.name: float(m.result()) for m in metrics}
  for metric in metrics:
    metric.reset_state()
  validation_batch = next(iter(task.build_inputs(task.task_config.validation_data)))
  validation_logs = task.validation_step(validation_batch, model, metrics=metrics)
  return StepReport(model, batch, float(train_logs['loss']), train_metrics,
                    float(validation_logs['loss']), {m.name: float(m.result()) for m in metrics})


def build_step_variables(model, optimizer, batch=None):
  """Creates `model`'s (by calling it on `batch`) and `optimizer`'s variables before a traced step.

  A `tf.function` that creates variables on its first call is traced twice: a 2-layer demo's
  first train step then takes 29 s instead of 7 s on 2 cores. Without `batch`, `model` must
  already be built; calling it draws from its sampling seed stream as a step would.
  """
  if batch is not None:
    model(batch)
  if not resume.create_optimizer_variables(optimizer, model.trainable_variables):
    optimizer.build(model.trainable_variables)  # A new-style Keras optimizer.


def overfit_losses(task, steps, learning_rate=3e-3):
  """(first, last) training loss of `steps` + 1 steps on one fixed batch of `task`'s train data.

  `task` is a pretraining Task whose `train_data` is configured (e.g. `sample_task_config`).
  """
  model = task.build_model()
  batch = next(iter(task.build_inputs(task.task_config.train_data)))
  optimizer = constant_lr_optimizer(learning_rate)
  build_step_variables(model, optimizer, batch)
  metrics = task.build_metrics()
  step = tf.function(lambda: task.train_step(batch, model, optimizer, metrics=metrics))
  first = float(step()['loss'])
  for _ in range(steps):
    last = float(step()['loss'])
  return first, last


def pretraining_batch(batch_size=3, seq_length=SEQ_LENGTH, num_predictions=NUM_PREDICTIONS,
                      vocab_size=VOCAB_SIZE, seed=0):
  """A masked batch with padding: real tokens, [MASK]ed positions, padded prediction slots.

  Ids 0-4 are [PAD] [UNK] [CLS] [SEP] [MASK]. Row b has seq_length - 2b real tokens and
  num_predictions - b real predictions (at least 1), so both kinds of padding occur.
  """
  rng = np.random.default_rng(seed)
  word_ids = np.zeros([batch_size, seq_length], np.int32)
  input_mask = np.zeros([batch_size, seq_length], np.int32)
  positions = np.zeros([batch_size, num_predictions], np.int32)
  ids = np.zeros([batch_size, num_predictions], np.int32)
  weights = np.zeros([batch_size, num_predictions], np.float32)
  for b in range(batch_size):
    length = seq_length - 2 * b
    tokens = rng.integers(5, vocab_size, size=length)
    tokens[0], tokens[-1] = 2, 3
    count = max(1, num_predictions - b)
    chosen = np.sort(rng.choice(np.arange(1, length - 1), size=count, replace=False))
    positions[b, :count] = chosen
    ids[b, :count] = tokens[chosen]
    weights[b, :count] = 1.0
    tokens[chosen] = 4
    word_ids[b, :length] = tokens
    input_mask[b, :length] = 1
  return dict(
      input_word_ids=tf.constant(word_ids),
      input_mask=tf.constant(input_mask),
      input_type_ids=tf.zeros([batch_size, seq_length], tf.int32),
      masked_lm_positions=tf.constant(positions),
      masked_lm_ids=tf.constant(ids),
      masked_lm_weights=tf.constant(weights))


def tiny_coco_lm_config(**overrides):
  """COCO-LM over the 2-layer tiny encoder: 1-layer auxiliary, relative positions (8 buckets)."""
  defaults = dict(
      encoder=tiny_encoder_config(), num_generator_layers=1, relative_position_num_buckets=8,
      relative_position_max_distance=16)
  defaults.update(overrides)
  return models.CocoLmConfig(**defaults)


def tiny_script_config(**overrides):
  """SCRIPT over the 2-layer tiny encoder."""
  defaults = dict(encoder=tiny_encoder_config())
  defaults.update(overrides)
  return models.ScriptConfig(**defaults)


def tiny_taco_config(**overrides):
  """TACO over the 2-layer tiny encoder (E 16 != H 32: e goes through the projection), K = 4."""
  defaults = dict(encoder=tiny_encoder_config(), num_negatives=4, window_size=2)
  defaults.update(overrides)
  return models.TacoConfig(**defaults)


def parameter_count(model):
  """Scalars in a built model's weights; the sampling stream's state is not a parameter."""
  return sum(int(np.prod(w.shape)) for w in model.weights
             if 'seed_stream_state' not in w.name)


def bert_parameter_count(encoder_config):
  """Parameters of Model Garden's BERT (`BertPretrainerV2`, MLM head only) on `encoder_config`."""
  bert = garden_models.BertPretrainerV2(encoder_network=encoders.build_encoder(
      encoders.EncoderConfig(type='bert_v2', bert_v2=encoder_config)))
  bert(pretraining_batch())
  return bert.count_params()


def unmask(batch):
  """Puts the original tokens back at the masked positions of a NumPy batch: [B, T] int32."""
  word_ids = batch['input_word_ids'].copy()
  for row, (positions, ids, weights) in enumerate(
      zip(batch['masked_lm_positions'], batch['masked_lm_ids'], batch['masked_lm_weights'])):
    real = weights > 0
    word_ids[row, positions[real]] = ids[real]
  return word_ids


def kept_encoder(model):
  """The encoder a pretrainer keeps: its one encoder, or the discriminator."""
  return getattr(model, 'encoder_network', None) or model.discriminator_network


def encoder_inputs(batch):
  """The encoder's three inputs of a pretraining batch."""
  return {key: batch[key] for key in ('input_word_ids', 'input_mask', 'input_type_ids')}


# (name, builder, tiny config) of every objective's pretrainer, for properties they all share.
PRETRAINER_BUILDS = (
    ('bert', mlm_pretrainer.build_mlm_pretrainer, tiny_mlm_config),
    ('teams', teams_pretrainer.build_teams_pretrainer, tiny_teams_config),
    ('coco_lm', coco_lm_pretrainer.build_coco_lm_pretrainer, tiny_coco_lm_config),
    ('script', script_pretrainer.build_script_pretrainer, tiny_script_config),
    ('taco', taco_pretrainer.build_taco_pretrainer, tiny_taco_config),
)
