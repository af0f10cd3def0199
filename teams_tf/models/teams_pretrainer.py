"""TEAMS pretrainer: generator MLM + discriminator RTD and MWS (Shen et al., 2021, §3).

ELECTRA (RTD only) and "Only MWS" are configurations of the same model (TEAMS Table 2): a loss
weight of 0 leaves its head out.

Data flow for one batch (shapes: B batch, T tokens, P masked slots, K negatives, V vocab):
  x^M --generator--> MLM logits [B, P, V] --CandidateSampler--> x̂ [B, P], negatives [B, P, K]
  x^R = x with x̂ at the masked positions (or at a random `corruption_fraction` of them)
      --discriminator (L layers)-->
      layer L      -> MultiWordSelectionHead over {x_i} ∪ negatives -> MWS logits [B, P, K + 1]
      layer L - 1  -> AttentionRtdHead (one extra transformer layer)  -> RTD logits [B, T]
After pretraining the discriminator (its L-layer stack, i.e. the MWS representations) is the
encoder that is kept (§3.2, footnote 3). Table 3's variants change the RTD head (per-token FFN),
where it reads (layer L), add an MWS task layer, or keep the RTD branch instead.
"""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers

from teams_tf.configs import models as model_configs
from teams_tf.layers import candidate_sampler
from teams_tf.layers import mlm_head
from teams_tf.layers import mws_head
from teams_tf.layers import rtd_head as rtd_head_lib
from teams_tf.networks import shared_encoders
from teams_tf.ops import replica_random
from teams_tf.ops import token_sampling


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class TeamsPretrainer(tf_keras.Model):
  """Generator + discriminator with optional RTD and MWS heads (TEAMS; ELECTRA; MWS only).

  Inputs (dict): `input_word_ids` [B, T] int32 (x^M: masked tokens replaced per the masking
  policy), `input_mask` [B, T] int32, `input_type_ids` [B, T] int32, `masked_lm_positions`
  [B, P] int32, `masked_lm_ids` [B, P] int32 (original tokens), `masked_lm_weights` [B, P]
  float32 (0 for padded slots).

  Outputs (dict):
    `mlm_logits`: [B, P, V] float32 generator logits (Eq. 2).
    `replaced_ids`: [B, P] int32 tokens of x^R at the masked positions: the sampled x̂, or
      the original where a training step leaves a position uncorrupted (`corruption_fraction`);
      no gradient.
    `corrupted_weights`: [B, P] float32 `masked_lm_weights` of the corrupted positions only
      (all of them outside training or when `corruption_fraction` is 1): where MWS selects.
    `rtd_labels`: [B, T] float32, 1 where x^R_i = x_i (every unmasked token, and masked ones
      whose sample equals the original), 0 where replaced.
    `rtd_logits`: [B, T] float32 log-odds that x^R_i is original (Eq. 3/6); only with an RTD
      head.
    `mws_logits`: [B, P, K + 1] float32 candidate scores (Eq. 7), column 0 the original;
      `candidate_ids`: [B, P, K + 1] int32 candidate sets S_i; only with K > 0.
    `sequence_output`: [B, T, H] discriminator layer-L output.

  Gradients: the generator learns only from the MLM loss; sampling is wrapped in
  `tf.stop_gradient` and x^R enters the discriminator as token ids. The RTD and MWS losses
  reach the discriminator, the shared embeddings (MWS also through the candidate embeddings)
  and the shared bottom layers.
  """

  def __init__(self,
               generator_network,
               discriminator_network,
               rtd_head=None,
               rtd_head_input_layer=None,
               num_negatives=5,
               candidate_sampling='sampled',
               mws_task_layer=None,
               exported_representation='top',
               mlm_activation='gelu',
               mlm_initializer='glorot_uniform',
               tie_output_embeddings=True,
               corruption_fraction=1.0,
               seed=None,
               **kwargs):
    """Initializes the pretrainer.

    Args:
      generator_network: EncoderScaffold (dict outputs) producing h_G(x^M).
      discriminator_network: EncoderScaffold (dict outputs, all layer outputs) producing
        h_D(x^R); its embedding table is the tied table used by every head.
      rtd_head: an `AttentionRtdHead` or `FfnRtdHead`, or None for no RTD task.
      rtd_head_input_layer: 1-based discriminator layer feeding `rtd_head`.
      num_negatives: K; 0 means no MWS task (no candidate sets, no MWS head).
      candidate_sampling: 'sampled' or 'hardest'.
      mws_task_layer: optional transformer layer between discriminator layer L and the MWS
        head.
      exported_representation: 'top' or 'rtd_task_layer'; see `TeamsConfig`.
      mlm_activation: activation of the MLM and MWS transform layers.
      mlm_initializer: initializer of the MLM and MWS head kernels.
      tie_output_embeddings: the MLM output layer is the embedding table (else its own).
      corruption_fraction: share of the masked positions whose sample x̂ enters x^R; see
        `TeamsConfig.corruption_fraction`.
      seed: int base seed of the sampling stream (`replica_random.SeedStream`); None
        draws one. Its state is checkpointed, resumes, and is the same on every replica.
      **kwargs: Keras model arguments (`name`, ...).
    """
    super().__init__(**kwargs)
    num_layers = len(discriminator_network.hidden_layers)
    if rtd_head is not None and not 1 <= (rtd_head_input_layer or 0) <= num_layers:
      raise ValueError(
          f'rtd_head_input_layer={rtd_head_input_layer} must be in [1, {num_layers}] '
          '(1-based discriminator layer).')
    if exported_representation == 'rtd_task_layer' and not hasattr(rtd_head, 'task_layer'):
      raise ValueError("exported_representation='rtd_task_layer' needs an attention RTD head.")
    self._rtd_head_input_layer = rtd_head_input_layer
    self._exported_representation = exported_representation
    self._corruption_fraction = corruption_fraction
    self.generator_network = generator_network
    self.discriminator_network = discriminator_network
    embedding_table = discriminator_network.get_embedding_table()
    initializer = tf_keras.initializers.get(mlm_initializer)
    self.masked_lm = mlm_head.output_head(
        embedding_table, tie_output_embeddings,
        activation=tf_utils.get_activation(mlm_activation), initializer=initializer,
        name='generator_predictions')
    self.candidate_sampler = candidate_sampler.CandidateSampler(
        num_negatives=num_negatives, strategy=candidate_sampling, name='candidate_sampler')
    self.mws_head = None
    if num_negatives:
      self.mws_head = mws_head.MultiWordSelectionHead(
          embedding_table=embedding_table,
          activation=tf_utils.get_activation(mlm_activation),
          initializer=tf_utils.clone_initializer(initializer),
          name='mws_head')
    self.mws_task_layer = mws_task_layer
    self.rtd_head = rtd_head
    self.attention_mask = layers.SelfAttentionMask()
    self._seeds = replica_random.SeedStream(seed, name='seed_stream')

  def call(self, inputs, training=None):
    """Runs generator, sampler, discriminator and heads; see the class docstring."""
    word_ids = inputs['input_word_ids']
    input_mask = inputs['input_mask']
    type_ids = inputs['input_type_ids']
    positions = inputs['masked_lm_positions']
    original_ids = inputs['masked_lm_ids']
    weights = inputs['masked_lm_weights']

    generator_outputs = self.generator_network(
        [word_ids, input_mask, type_ids], training=training)
    mlm_logits = self.masked_lm(generator_outputs['sequence_output'], positions)  # float32

    samples = self.candidate_sampler(
        mlm_logits, original_ids, seed=self._seeds.next()[0])
    replaced_ids, corrupted_weights = samples['replaced_ids'], weights
    if training and self._corruption_fraction < 1:
      is_corrupted = replica_random.uniform(
          tf.shape(positions), self._seeds.next()[0]) < self._corruption_fraction
      replaced_ids = tf.where(is_corrupted, replaced_ids, tf.cast(original_ids, tf.int32))
      corrupted_weights = weights * tf.cast(is_corrupted, weights.dtype)
    original, corrupted = token_sampling.replace_masked_tokens(
        word_ids, positions, weights, original_ids, replaced_ids)
    outputs = dict(
        mlm_logits=mlm_logits,
        replaced_ids=replaced_ids,
        corrupted_weights=corrupted_weights,
        rtd_labels=tf.cast(tf.equal(corrupted, original), tf.float32))

    discriminator_outputs = self.discriminator_network(
        [corrupted, input_mask, type_ids], training=training)
    sequence_output = discriminator_outputs['sequence_output']
    outputs['sequence_output'] = sequence_output
    attention_mask = self.attention_mask(sequence_output, input_mask)
    if self.rtd_head is not None:
      rtd_input = discriminator_outputs['encoder_outputs'][self._rtd_head_input_layer - 1]
      outputs['rtd_logits'] = self.rtd_head(rtd_input, attention_mask, training=training)
    if self.mws_head is not None:
      mws_input = sequence_output
      if self.mws_task_layer is not None:
        mws_input = self.mws_task_layer([sequence_output, attention_mask], training=training)
      candidate_ids = tf.concat(
          [tf.cast(original_ids, tf.int32)[..., None], samples['negative_ids']], axis=-1)
      outputs['mws_logits'] = self.mws_head(mws_input, positions, candidate_ids)
      outputs['candidate_ids'] = candidate_ids
    return outputs

  @property
  def rtd_head_input_layer(self):
    """The 1-based discriminator layer the RTD head reads (None without an RTD head)."""
    return self._rtd_head_input_layer

  @property
  def kept_transformer_layers(self):
    """The transformer stack kept for fine-tuning, bottom first (`exported_representation`)."""
    discriminator_layers = list(self.discriminator_network.hidden_layers)
    if self._exported_representation == 'rtd_task_layer':
      return discriminator_layers[:self._rtd_head_input_layer] + [self.rtd_head.task_layer]
    if self.mws_task_layer is not None:
      return discriminator_layers + [self.mws_task_layer]
    return discriminator_layers

  @property
  def checkpoint_items(self):
    """Extra top-level checkpoint entries (Model Garden's trainer saves them beside `model`).

    `encoder` is the kept stack (`kept_transformer_layers` over the discriminator's embeddings)
    laid out as Model Garden's `BertEncoderV2`, so fine-tuning tasks restore it with
    `encoder.type: bert_v2`, `num_layers` = its depth, and `init_checkpoint`. With a relative
    position bias or pre-LN blocks (whose final LayerNorm BertEncoderV2 lacks) the kept stack is
    the discriminator itself (`resolve_layout` allows no other), saved as is, which
    `shared_encoders.build_relative_position_encoder` rebuilds.
    """
    if not shared_encoders.has_bert_v2_layout(self.discriminator_network):
      return dict(encoder=self.discriminator_network)
    return dict(encoder=shared_encoders.BertEncoderV2CheckpointView(
        self.discriminator_network, self.kept_transformer_layers))

  def get_config(self):
    raise NotImplementedError(
        'TeamsPretrainer shares layers between its networks and cannot be rebuilt from its '
        'config; use build_teams_pretrainer(TeamsConfig) and restore a checkpoint.')


def resolve_layout(config: model_configs.TeamsConfig):
  """Checks a TeamsConfig and resolves its defaults, without building anything.

  The one check of a TeamsConfig: `build_teams_pretrainer` and the FLOP count call it, so a bad
  value fails before any layer is created (and, in `teams_tf.train`, before anything is written).

  Args:
    config: a TeamsConfig.

  Returns:
    Dict of resolved ints: `num_generator_layers`, `num_shared_layers`,
    `rtd_head_input_layer` (None without RTD), `num_negatives` (0 without MWS) and
    `kept_encoder_layers` (depth of the exported BertEncoderV2).

  Raises:
    ValueError: naming the field, the bad value and the valid range.
  """
  num_layers = config.encoder.num_layers
  # None: half the discriminator depth, and its bottom half shared (the paper's defaults).
  depth = (max(1, num_layers // 2) if config.num_generator_layers is None
           else config.num_generator_layers)
  num_shared = depth // 2 if config.num_shared_layers is None else config.num_shared_layers
  shared_encoders.check_encoder_pair(config.encoder, depth, num_shared,
                                     config.generator_width_fraction)
  for field in ('rtd_loss_weight', 'mws_loss_weight'):
    if getattr(config, field) < 0:
      raise ValueError(f'{field}={getattr(config, field)} must be >= 0 (0 disables the task).')
  has_rtd, has_mws = config.rtd_loss_weight > 0, config.mws_loss_weight > 0
  if not (has_rtd or has_mws):
    raise ValueError('rtd_loss_weight and mws_loss_weight are both 0: the discriminator would '
                     'learn nothing; keep at least one task (TEAMS: 5 and 2).')
  if config.rtd_head_type not in ('attention', 'ffn'):
    raise ValueError(
        f"rtd_head_type={config.rtd_head_type!r} must be 'attention' (TEAMS) or 'ffn' (ELECTRA).")
  default_rtd_layer = num_layers - 1 if config.rtd_head_type == 'attention' else num_layers
  rtd_layer = (default_rtd_layer if config.rtd_head_input_layer is None
               else config.rtd_head_input_layer)
  if has_rtd and not 1 <= rtd_layer <= num_layers:
    raise ValueError(
        f'rtd_head_input_layer={rtd_layer} must be in [1, {num_layers}] (1-based '
        'discriminator layer; None = L - 1 for the attention head, L for the FFN head).')
  if not 0 < config.corruption_fraction <= 1:
    raise ValueError(
        f'corruption_fraction={config.corruption_fraction} must be in (0, 1] (share of the '
        'masked positions whose generator sample enters the discriminator; papers: 1).')
  if config.rtd_loss_positions not in ('all', 'text'):
    raise ValueError(
        f"rtd_loss_positions={config.rtd_loss_positions!r} must be 'all' (every non-padding "
        "token, the papers) or 'text' ([CLS] and [SEP] left out).")
  if config.candidate_sampling not in ('sampled', 'hardest'):
    raise ValueError(
        f"candidate_sampling={config.candidate_sampling!r} must be 'sampled' or 'hardest'.")
  if has_mws and not 1 <= config.num_negatives < config.encoder.vocab_size:
    raise ValueError(
        f'num_negatives={config.num_negatives} must be in [1, vocab_size - 1 = '
        f'{config.encoder.vocab_size - 1}] (K non-original candidates; paper default 5).')
  if config.mws_task_layer and not has_mws:
    raise ValueError('mws_task_layer=True needs the MWS task (mws_loss_weight > 0).')
  if config.exported_representation == 'rtd_task_layer':
    if not has_rtd or config.rtd_head_type != 'attention':
      raise ValueError(
          "exported_representation='rtd_task_layer' needs the attention RTD head "
          "(rtd_loss_weight > 0 and rtd_head_type='attention').")
    kept_layers = rtd_layer + 1
  elif config.exported_representation == 'top':
    kept_layers = num_layers + int(config.mws_task_layer)
  else:
    raise ValueError(f'exported_representation={config.exported_representation!r} must be '
                     "'top' (paper default) or 'rtd_task_layer'.")
  if not model_configs.kept_as_bert_v2(config) and (config.exported_representation != 'top' or
                                                     config.mws_task_layer):
    raise ValueError(
        f'relative_position_bias={config.relative_position_bias} and encoder.norm_first='
        f'{config.encoder.norm_first} keep the discriminator itself as the encoder (with its '
        'relative position bias or final LayerNorm), but '
        f'exported_representation={config.exported_representation!r} and '
        f'mws_task_layer={config.mws_task_layer} keep another stack; use the defaults '
        "('top', False), or absolute positions and post-LN blocks.")
  shared_encoders.validate_relative_positions(
      model_configs.relative_position_buckets(config), config.relative_position_max_distance,
      config.relative_position_bias_scale)
  return dict(num_generator_layers=depth, num_shared_layers=num_shared,
              rtd_head_input_layer=rtd_layer if has_rtd else None,
              num_negatives=config.num_negatives if has_mws else 0,
              kept_encoder_layers=kept_layers)


def _build_rtd_head(config: model_configs.TeamsConfig):
  """The RTD head of `config.rtd_head_type`, as wide as the discriminator."""
  if config.rtd_head_type == 'ffn':
    return rtd_head_lib.FfnRtdHead(
        hidden_size=config.encoder.hidden_size,
        activation=config.encoder.hidden_activation,
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=config.encoder.initializer_range),
        name='rtd_head')
  # The RTD task layer is one more transformer layer of the discriminator's width (§3.2).
  return rtd_head_lib.AttentionRtdHead(
      **shared_encoders.transformer_block_kwargs(config.encoder), name='rtd_head')


def flop_shapes(config: model_configs.TeamsConfig, seq_length: int) -> tuple[str, dict]:
  """What `training.flops.step_flops` counts of this model, beside B, T, P and the encoder.

  Returns:
    ('teams', shapes) with MWS, else ('electra', shapes): the generator's BertEncoderConfig, K,
    the RTD head type (None without RTD) and the MWS task layer.
  """
  del seq_length  # No TEAMS cost depends on T beyond what every objective's does.
  layout = resolve_layout(config)
  generator = shared_encoders.generator_encoder_config(config.encoder,
                                                       config.generator_width_fraction)
  generator.num_layers = layout['num_generator_layers']
  return ('teams' if layout['num_negatives'] else 'electra'), dict(
      generator=generator, num_negatives=layout['num_negatives'],
      rtd_head=config.rtd_head_type if layout['rtd_head_input_layer'] else None,
      mws_task_layer=config.mws_task_layer)


def build_teams_pretrainer(config: model_configs.TeamsConfig, seed=None):
  """Builds a `TeamsPretrainer` from its config (the only reader of TeamsConfig).

  Args:
    config: a TeamsConfig.
    seed: optional int seed for the sampling stream (tests and reproducible runs).

  Returns:
    A TeamsPretrainer.

  Raises:
    ValueError: an invalid combination, naming the field, the value and the fix.
  """
  layout = resolve_layout(config)
  generator, discriminator = shared_encoders.build_generator_and_discriminator(
      config.encoder, num_generator_layers=layout['num_generator_layers'],
      num_shared_layers=layout['num_shared_layers'],
      generator_width_fraction=config.generator_width_fraction,
      relative_position_num_buckets=model_configs.relative_position_buckets(config),
      relative_position_max_distance=config.relative_position_max_distance,
      relative_position_bias_scale=config.relative_position_bias_scale)
  # No loss reads the pooled [CLS] output (there is no next-sentence task), so the poolers
  # stay out of the optimizer instead of being reported as variables without gradients.
  generator.pooler_layer.trainable = False
  discriminator.pooler_layer.trainable = False
  mws_task_layer = None
  if config.mws_task_layer:
    mws_task_layer = layers.TransformerEncoderBlock(
        **shared_encoders.transformer_block_kwargs(config.encoder), name='mws_task_layer')
  return TeamsPretrainer(
      generator_network=generator,
      discriminator_network=discriminator,
      rtd_head=_build_rtd_head(config) if layout['rtd_head_input_layer'] else None,
      rtd_head_input_layer=layout['rtd_head_input_layer'],
      num_negatives=layout['num_negatives'],
      candidate_sampling=config.candidate_sampling,
      mws_task_layer=mws_task_layer,
      exported_representation=config.exported_representation,
      tie_output_embeddings=config.tie_output_embeddings,
      corruption_fraction=config.corruption_fraction,
      mlm_activation=config.encoder.hidden_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=config.encoder.initializer_range),
      seed=seed,
      name='teams_pretrainer')
