"""FLOPs of one training step of a pretraining experiment, read from its config.

Maps a pretrainer config (`configs/models.py`) and the training shapes of its experiment onto the
analytic counter `training.flops.step_flops`. What only one objective has (generator depth and
width, which heads exist, K, the COCO-LM crop length) its pretrainer module declares in
`flop_shapes`, with the builder's own functions, so the count follows every configuration the
models accept; its task module registers it here. Used by the training budgets
(`training.budgets`) and the throughput benchmark (`tools/benchmark_pretrain.py`).
"""

from typing import Callable

from official.nlp.configs import encoders

from teams_tf.training import flops

# Pretrainer config type -> its objective's `flop_shapes(config, seq_length)`.
_SHAPES: dict[type, Callable] = {}


def register(config_type: type, shapes: Callable) -> None:
  """Declares how to count a pretrainer config: its objective's `flop_shapes`.

  Each objective's task module registers its own (`tasks/teams_task.py` ...), so a new objective
  adds its count without editing training/.

  Args:
    config_type: the pretrainer config class (`configs/models.py`).
    shapes: (config, seq_length) -> (objective of `flops.step_flops`, the shapes only it has;
      a `BertEncoderConfig` among them, e.g. a generator, is counted by its dimensions).
  """
  _SHAPES[config_type] = shapes


def _encoder_dims(config):
  """The counter's description of a `BertEncoderConfig` (E defaults to H, as the encoder does)."""
  return dict(layers=config.num_layers, hidden=config.hidden_size,
              intermediate=config.intermediate_size, heads=config.num_attention_heads,
              embedding=config.embedding_size or config.hidden_size)


def model_shapes(model_config, batch, seq_length, predictions):
  """The counter's objective and shapes for a pretrainer config at B, T, P.

  Args:
    model_config: a registered pretrainer config (`TeamsConfig`, `MlmConfig`, ...).
    batch: B, the global batch size (the FLOPs of a step summed over replicas).
    seq_length: T.
    predictions: P, `max_predictions_per_seq` (padded slots included: the heads compute them).

  Returns:
    (objective, shapes), the arguments of `flops.step_flops`.

  Raises:
    ValueError: an unregistered config type, or a config its builder would refuse (naming the
      field).
  """
  shapes_of = next((_SHAPES[kind] for kind in type(model_config).__mro__ if kind in _SHAPES), None)
  if shapes_of is None:
    raise ValueError(f'No FLOP count for a {type(model_config).__name__} model; pretraining '
                     f'models are {", ".join(sorted(c.__name__ for c in _SHAPES))} (each '
                     'objective\'s task module registers its count).')
  encoder = model_config.encoder
  objective, own = shapes_of(model_config, seq_length)
  own = {key: _encoder_dims(value) if isinstance(value, encoders.BertEncoderConfig) else value
         for key, value in own.items()}
  return objective, dict(batch=batch, seq_length=seq_length, predictions=predictions,
                         vocab_size=encoder.vocab_size, encoder=_encoder_dims(encoder),
                         embedding=encoder.embedding_size or encoder.hidden_size, **own)


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
