"""What a training model_dir holds: its settings, its kept encoder's architecture, its pretrainer.

Export, scoring and conversion tools read a run's `params.yaml` (and that of the pretraining run
named by its `task.init_checkpoint`) and its checkpoints; this module turns them into settings,
Model Garden configs and the built (not yet restored) pretrainer.
"""

import os

from absl import logging
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from official.modeling import hyperparams
from official.nlp.configs import encoders

from teams_tf.configs import encoders as encoder_configs
from teams_tf.configs import models as model_configs
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import mlm_pretrainer
from teams_tf.models import script_pretrainer
from teams_tf.models import taco_pretrainer
from teams_tf.models import teams_pretrainer

# Binds the builder of `RelativePositionEncoderConfig`, which `kept_encoder_config` may return.
from teams_tf.networks import shared_encoders  # pylint: disable=unused-import
from teams_tf.ops import replica_random


class RunSettings:
  """Export settings: a flag if given, else the run's params.yaml, else its pretraining run's."""

  def __init__(self, model_dir):
    self.params = self._read(os.path.join(model_dir, 'params.yaml'), '--model_dir')
    self._sources = [(os.path.join(model_dir, 'params.yaml'), self.params)]
    init_checkpoint = self.params.get('task', {}).get('init_checkpoint')
    if init_checkpoint:
      pretrain_dir = (init_checkpoint if tf.io.gfile.isdir(init_checkpoint) else
                      os.path.dirname(init_checkpoint))
      path = os.path.join(pretrain_dir, 'params.yaml')
      if tf.io.gfile.exists(path):
        self._sources.append((path, self._read(path, 'task.init_checkpoint')))

  @staticmethod
  def _read(path, origin):
    if not tf.io.gfile.exists(path):
      raise ValueError(f'{path} does not exist; {origin} must be a training model_dir (train.py '
                       'writes params.yaml there).')
    return hyperparams.read_yaml_to_params_dict(path).as_dict()

  def get(self, flag_name, flag_value, *keys, default=None):
    """Returns `flag_value`, else the first set dotted key of the params files, else `default`."""
    if flag_value is not None:
      return flag_value
    for path, params in self._sources:
      for key in keys:
        value = params
        for part in key.split('.'):
          value = value.get(part) if isinstance(value, dict) else None
        if value not in (None, ''):
          logging.info('%s=%r from %s (%s)', flag_name, value, path, key)
          return value
    if default is not None:
      return default
    raise ValueError(f'Pass --{flag_name}: it is not set by {" or ".join(keys)} in '
                     f'{" or ".join(path for path, _ in self._sources)}.')


def parse_model_config(config, values, path):
  """Overrides a Model Garden config with the `task.model` dict of params.yaml.

  An `encoder` of type `any` is read as this project's `RelativePositionEncoderConfig`, the one
  `any` encoder it registers (the `*_demo`/`*_mini` fine-tuning encoder, COCO-LM's main
  Transformer): Model Garden declares that field as an empty `hyperparams.Config`, which no saved
  key would fit.
  """
  encoder_values = values.get('encoder') if isinstance(values, dict) else None
  if (isinstance(encoder_values, dict) and encoder_values.get('type') == 'any'
      and isinstance(getattr(config, 'encoder', None), encoders.EncoderConfig)):
    config.encoder.any = encoder_configs.RelativePositionEncoderConfig()
  try:
    config.override(values, is_strict=True)
  except (KeyError, ValueError, TypeError, AttributeError) as e:
    raise ValueError(f'task.model in {path} is not a {type(config).__module__}.'
                     f'{type(config).__name__} (wrong --kind?): {e}') from e
  return config


def _kept_encoder_depth(checkpoint_path):
  """Number of transformer layers under the checkpoint item `encoder` (0 if there is none).

  Read from the checkpoint's object graph: a layer that is also reachable by another path (an
  extra task layer of the pretrainer) has its variables listed under that path only.
  """
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(
      tf.train.load_checkpoint(checkpoint_path).get_tensor('_CHECKPOINTABLE_OBJECT_GRAPH'))

  def child(node_id, name):
    return next((ref.node_id for ref in graph.nodes[node_id].children if ref.local_name == name),
                None)

  encoder = child(0, 'encoder')
  layers = None if encoder is None else child(encoder, '_transformer_layers')
  return 0 if layers is None else len(graph.nodes[layers].children)


def kept_encoder_config(model_values, params_path, checkpoint_path):
  """The kept encoder's `EncoderConfig` from the `task.model` dict of a pretraining params.yaml."""
  encoder_values = model_values.get('encoder') or {}
  if 'type' in encoder_values:  # A Model Garden EncoderConfig (oneof), e.g. from BERT runs.
    return parse_model_config(encoders.EncoderConfig(), encoder_values, params_path)
  bert_config = parse_model_config(encoders.BertEncoderConfig(), encoder_values, params_path)
  relative_positions = model_values.get('relative_position_bias')
  if relative_positions or bert_config.norm_first:
    # Saved as itself (`configs.models.kept_as_bert_v2`): BERT plus T5 relative positions
    # (COCO-LM's main Transformer, the mini recipe) or a pre-LN encoder's final LayerNorm.
    return encoders.EncoderConfig(type='any', any=encoder_configs.RelativePositionEncoderConfig(
        **bert_config.as_dict(),
        relative_position_num_buckets=(
            model_values['relative_position_num_buckets'] if relative_positions else 0),
        relative_position_max_distance=model_values.get('relative_position_max_distance', 128),
        relative_position_bias_scale=model_values.get('relative_position_bias_scale', 1.0)))
  # The other pretrainers keep a BertEncoderConfig, saved as BertEncoderV2. The kept stack can
  # differ in depth from the discriminator (TEAMS Table 3 variants), so the checkpoint, which
  # holds exactly the kept layers, sets the depth.
  depth = _kept_encoder_depth(checkpoint_path)
  if depth and depth != bert_config.num_layers:
    logging.info('The kept encoder in %s has %d layers (the discriminator %d).',
                 checkpoint_path, depth, bert_config.num_layers)
    bert_config.num_layers = depth
  return encoders.EncoderConfig(type='bert_v2', bert_v2=bert_config)


def built_pretrainer(build, model_config):
  """`build(model_config)` with every variable created (fresh weights)."""
  pretrainer = build(model_config)
  # Two sequences: TACO draws its negatives from the other sequences of the batch.
  ones = tf.ones([2, 4], tf.int32)
  pretrainer(dict(input_word_ids=ones, input_mask=ones, input_type_ids=ones * 0,
                  masked_lm_positions=ones[:, :1], masked_lm_ids=ones[:, :1],
                  masked_lm_weights=tf.ones([2, 1])))
  return pretrainer


def restore_pretrainer(pretrainer, checkpoint_path):
  """Reads a built pretrainer's weights from checkpoint root `model`; each must be found.

  The sampling stream is not read: serving never samples, and checkpoints written before it
  existed load too.

  Raises:
    ValueError: the checkpoint does not hold this pretrainer.
  """
  weights = {name: child
             for name, child in tf.train.TrackableView(pretrainer).children(pretrainer).items()
             if not isinstance(child, replica_random.SeedStream)}
  try:
    tf.train.Checkpoint(model=tf.train.Checkpoint(**weights)).read(
        checkpoint_path).expect_partial().assert_existing_objects_matched()
  except (AssertionError, ValueError) as e:
    raise ValueError(f'Checkpoint {checkpoint_path} does not hold a {type(pretrainer).__name__} '
                     f'described by its params.yaml (wrong --model_dir?): '
                     f'{" ".join(str(e).split())[:1000]}') from e


# Every pretraining objective's model config and builder. params.yaml does not name the class, so
# a run's is the one whose fields are exactly those of its `task.model`.
_PRETRAINERS = (
    (model_configs.TeamsConfig, teams_pretrainer.build_teams_pretrainer),
    (model_configs.MlmConfig, mlm_pretrainer.build_mlm_pretrainer),
    (model_configs.CocoLmConfig, coco_lm_pretrainer.build_coco_lm_pretrainer),
    (model_configs.ScriptConfig, script_pretrainer.build_script_pretrainer),
    (model_configs.TacoConfig, taco_pretrainer.build_taco_pretrainer),
)


def pretraining_model(model_values: dict, params_path: str):
  """(model config, builder) of a pretraining run's `task.model` dict.

  Raises:
    ValueError: `task.model` is no pretraining objective's (e.g. a fine-tuning run's).
  """
  for config_cls, build in _PRETRAINERS:
    if set(config_cls().as_dict()) == set(model_values):
      return parse_model_config(config_cls(), model_values, params_path), build
  raise ValueError(f'task.model in {params_path} is not a pretraining model of this project '
                   '(TEAMS/ELECTRA/MWS, BERT, COCO-LM, SCRIPT or TACO): pass a pretraining '
                   'model_dir.')
