"""FLOPs of one training step of a pretraining experiment, read from its config.

Maps a pretrainer config (`configs/models.py`) and the training shapes of its experiment onto the
analytic counter `training.flops.step_flops`, resolving what the builders resolve (generator
depth and width, which heads exist, K, the COCO-LM crop length) with the builders' own functions,
so the count follows every configuration the models accept. Used by the training budgets
(`training.budgets`) and the throughput benchmark (`tools/benchmark_pretrain.py`).
"""

from teams_tf.configs import models as model_configs
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import teams_pretrainer
from teams_tf.networks import shared_encoders
from teams_tf.training import flops

_PRETRAINING_CONFIGS = (model_configs.TeamsConfig, model_configs.MlmConfig,
                        model_configs.ScriptConfig, model_configs.TacoConfig,
                        model_configs.CocoLmConfig)


def _encoder_dims(config):
  """The counter's description of a `BertEncoderConfig` (E defaults to H, as the encoder does)."""
  return dict(layers=config.num_layers, hidden=config.hidden_size,
              intermediate=config.intermediate_size, heads=config.num_attention_heads,
              embedding=config.embedding_size or config.hidden_size)


def model_shapes(model_config, batch, seq_length, predictions):
  """The counter's objective and shapes for a pretrainer config at B, T, P.

  Args:
    model_config: a `TeamsConfig` (TEAMS, ELECTRA, Only MWS), `MlmConfig`, `ScriptConfig`,
      `TacoConfig` or `CocoLmConfig`.
    batch: B, the global batch size (the FLOPs of a step summed over replicas).
    seq_length: T.
    predictions: P, `max_predictions_per_seq` (padded slots included: the heads compute them).

  Returns:
    (objective, shapes), the arguments of `flops.step_flops`: 'teams' when a TeamsConfig has
    MWS, else 'electra' (with or without an RTD head); 'bert', 'script', 'taco' or 'coco_lm'.

  Raises:
    ValueError: another config type, or a config its builder would refuse (naming the field).
  """
  if not isinstance(model_config, _PRETRAINING_CONFIGS):
    raise ValueError(f'No FLOP count for a {type(model_config).__name__} model; pretraining '
                     f'models are {", ".join(c.__name__ for c in _PRETRAINING_CONFIGS)}.')
  encoder = model_config.encoder
  shapes = dict(batch=batch, seq_length=seq_length, predictions=predictions,
                vocab_size=encoder.vocab_size, encoder=_encoder_dims(encoder),
                embedding=encoder.embedding_size or encoder.hidden_size)
  if isinstance(model_config, model_configs.TeamsConfig):
    layout = teams_pretrainer.resolve_layout(model_config)
    generator = shared_encoders.generator_encoder_config(
        encoder, model_config.generator_width_fraction)
    generator.num_layers = layout['num_generator_layers']
    shapes.update(generator=_encoder_dims(generator), num_negatives=layout['num_negatives'],
                  rtd_head=model_config.rtd_head_type if layout['rtd_head_input_layer'] else None,
                  mws_task_layer=model_config.mws_task_layer)
    return ('teams' if layout['num_negatives'] else 'electra'), shapes
  if isinstance(model_config, model_configs.MlmConfig):
    return 'bert', shapes
  if isinstance(model_config, model_configs.ScriptConfig):
    return 'script', dict(shapes, straight_through=model_config.straight_through)
  if isinstance(model_config, model_configs.TacoConfig):
    return 'taco', dict(shapes, num_negatives=model_config.num_negatives,
                        mlm_all_positions=model_config.mlm_positions == 'all')
  generator = None  # What is left is a CocoLmConfig.
  if model_config.replacement == 'auxiliary':
    generator = _encoder_dims(shared_encoders.generator_encoder_config(
        encoder, model_config.generator_width_fraction))
    generator['layers'] = model_config.num_generator_layers
  return 'coco_lm', dict(
      shapes, generator=generator, sample_without_dropout=model_config.sample_without_dropout,
      lm_positions=model_config.lm_positions if model_config.lm_loss_weight else None,
      crop_length=(coco_lm_pretrainer.max_crop_length(seq_length, model_config.crop_fraction)
                   if model_config.scl_loss_weight else 0))


def step_flops(params):
  """FLOPs of one training step of a pretraining `ExperimentConfig`, over all replicas.

  At the training shapes: `task.train_data` global_batch_size, seq_length and
  max_predictions_per_seq, and `task.model`. Counted as `flops.FORMULA` says (matrix products
  only, forward + backward).

  Raises:
    ValueError: as `model_shapes`.
  """
  data = params.task.train_data
  objective, shapes = model_shapes(params.task.model, data.global_batch_size, data.seq_length,
                                   data.max_predictions_per_seq)
  return flops.step_flops(objective, shapes)[0]
