"""Model Garden's TEAMS and ELECTRA configured as ours, for the throughput benchmark's peers.

`official_params` turns one of our experiments into the ExperimentConfig of Model Garden's own
task (`official.projects.teams` or `official.nlp.tasks.electra_task`) at the same shapes, with
our trainer and runtime, so that `pretrain_variants` times both with one harness;
`cast_official_logits` is the smallest patch that lets Model Garden's step build under mixed
bfloat16. Imported only by the TensorFlow side of the benchmark. Model Garden's TEAMS project is
imported only where a function needs it, so that its ELECTRA variant's memory holds none of it.
"""

import tensorflow as tf

from official.core import config_definitions as cfg
from official.nlp.configs import electra
from official.nlp.configs import encoders
from official.nlp.data import pretrain_dataloader
from official.nlp.modeling.models import electra_pretrainer
from official.nlp.tasks import electra_task

from teams_tf.models import teams_pretrainer
from teams_tf.networks import shared_encoders
from teams_tf.training import experiment_flops


def official_teams_config(model_config):
  """Model Garden's `TeamsPretrainerConfig` at the configuration of our `TeamsConfig`.

  Mapping (ours -> official): encoder -> discriminator (same BertEncoderConfig); generator =
  encoder with num_layers = num_generator_layers (None -> L/2); num_shared_layers (None -> half
  the generator) -> num_shared_generator_hidden_layers; rtd_head_input_layer (None -> L-1) ->
  num_discriminator_task_agnostic_layers (its RTD head then has L - that = 1 transformer layer,
  ours 1); K = num_negatives -> candidate_size = K + 1; λ1, λ2 -> discriminator_rtd/mws loss
  weights; tie_embeddings=True.

  Raises:
    ValueError: a configuration Model Garden's TEAMS cannot express, naming the field.
  """
  from official.projects.teams import teams  # pylint: disable=g-import-not-at-top
  layout = teams_pretrainer.resolve_layout(model_config)
  required = dict(generator_width_fraction=1.0, rtd_head_type='attention',
                  candidate_sampling='sampled', mws_task_layer=False,
                  exported_representation='top')
  for field, supported in required.items():
    if getattr(model_config, field) != supported:
      raise ValueError(f'Model Garden TEAMS has no {field}={getattr(model_config, field)!r} '
                       f'(only {supported!r}).')
  if not (layout['num_negatives'] and layout['rtd_head_input_layer']):
    raise ValueError('Model Garden TEAMS always has both the RTD and the MWS task.')
  discriminator = model_config.encoder.replace()
  return teams.TeamsPretrainerConfig(
      candidate_size=layout['num_negatives'] + 1,
      generator_loss_weight=1.0,
      discriminator_rtd_loss_weight=model_config.rtd_loss_weight,
      discriminator_mws_loss_weight=model_config.mws_loss_weight,
      tie_embeddings=True,
      num_shared_generator_hidden_layers=layout['num_shared_layers'],
      num_discriminator_task_agnostic_layers=layout['rtd_head_input_layer'],
      generator=discriminator.replace(num_layers=layout['num_generator_layers']),
      discriminator=discriminator)


def official_electra_config(model_config, seq_length, predictions):
  """Model Garden's `ElectraPretrainerConfig` at the configuration of our ELECTRA `TeamsConfig`.

  Mapping: encoder -> discriminator_encoder (type 'bert', BertEncoderV2); the generator encoder is
  ours (`generator_encoder_config`: width × generator_width_fraction, embedding width kept, depth
  num_generator_layers) -> generator_encoder; rtd_loss_weight -> discriminator_loss_weight;
  tie_embeddings=True; no classification heads (ours has no next-sentence task).

  Raises:
    ValueError: a configuration Model Garden's ELECTRA cannot express, naming the field.
  """
  layout = teams_pretrainer.resolve_layout(model_config)
  if layout['num_negatives'] or model_config.rtd_head_type != 'ffn':
    raise ValueError('Model Garden ELECTRA is RTD only with an FFN head on layer L.')
  top_layer = model_config.encoder.num_layers
  if layout['num_shared_layers'] or layout['rtd_head_input_layer'] != top_layer:
    raise ValueError('Model Garden ELECTRA shares only embeddings and reads layer L.')
  generator = shared_encoders.generator_encoder_config(
      model_config.encoder, model_config.generator_width_fraction)
  generator.num_layers = layout['num_generator_layers']
  return electra.ElectraPretrainerConfig(
      num_masked_tokens=predictions, sequence_length=seq_length, num_classes=2,
      discriminator_loss_weight=model_config.rtd_loss_weight, tie_embeddings=True,
      disallow_correct=False,
      generator_encoder=encoders.EncoderConfig(type='bert', bert=generator),
      discriminator_encoder=encoders.EncoderConfig(type='bert', bert=model_config.encoder),
      cls_heads=[])


def official_params(params, spec):
  """ExperimentConfig for Model Garden's task, with our trainer (optimizer) and runtime."""
  model_config = params.task.model
  if spec['objective'] == 'teams':
    from official.projects.teams import teams_task  # pylint: disable=g-import-not-at-top
    task = teams_task.TeamsPretrainTaskConfig(model=official_teams_config(model_config))
    shapes = experiment_flops.model_shapes(model_config, spec['batch_size'], spec['seq_length'],
                                           spec['predictions'])[1]
    shapes['rtd_head'] = 'official_attention'
    flops_objective = 'teams'
  elif spec['objective'] == 'electra':
    # Its metrics read `train_data.use_next_sentence_label`; our batches have no NSP labels.
    task = electra_task.ElectraPretrainConfig(
        model=official_electra_config(model_config, spec['seq_length'], spec['predictions']),
        train_data=pretrain_dataloader.BertPretrainDataConfig(use_next_sentence_label=False))
    flops_objective, shapes = experiment_flops.model_shapes(
        model_config, spec['batch_size'], spec['seq_length'], spec['predictions'])
  else:
    raise ValueError(f"No Model Garden implementation of {spec['objective']!r}.")
  return (cfg.ExperimentConfig(task=task, trainer=params.trainer, runtime=params.runtime),
          flops_objective, shapes)


def cast_official_logits(task):
  """Makes Model Garden's samplers and losses see float32 logits (for mixed_bfloat16).

  Unpatched, its samplers add float32 Gumbel noise (and penalties) to the bfloat16 MLM logits,
  and its losses multiply bfloat16 RTD logits with float32 labels, so the step fails to build.
  Casting the logits to float32 where they enter the samplers and the losses is the smallest
  change that lets it run, so that it can be timed in bfloat16 too ('official_patched').
  """
  # pylint: disable-next=g-import-not-at-top
  from official.projects.teams import teams_pretrainer as official_teams_pretrainer
  sample = electra_pretrainer.sample_from_softmax
  sample_k = official_teams_pretrainer.sample_k_from_softmax
  electra_pretrainer.sample_from_softmax = lambda logits, disallow=None: sample(
      tf.cast(logits, tf.float32), disallow)
  official_teams_pretrainer.sample_k_from_softmax = (
      lambda logits, k, disallow=None, use_topk=False: sample_k(
          tf.cast(logits, tf.float32), k, disallow, use_topk))
  build_losses = task.build_losses

  def float32_build_losses(labels, model_outputs, metrics, aux_losses=None):
    model_outputs = {key: tf.cast(value, tf.float32) if value.dtype.is_floating else value
                     for key, value in model_outputs.items()}
    return build_losses(labels=labels, model_outputs=model_outputs, metrics=metrics,
                        aux_losses=aux_losses)

  task.build_losses = float32_build_losses
