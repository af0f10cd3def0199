"""TEAMS pretrainer: generator MLM + discriminator RTD and MWS (Shen et al., 2021, §3).

Data flow for one batch (shapes: B batch, T tokens, P masked slots, K negatives, V vocab):
  x^M --generator--> MLM logits [B, P, V] --CandidateSampler--> x̂ [B, P], negatives [B, P, K]
  x^R = x with x̂ at the masked positions --discriminator (L layers)-->
      layer L      -> MultiWordSelectionHead over {x_i} ∪ negatives -> MWS logits [B, P, K + 1]
      layer L - 1  -> AttentionRtdHead (one extra transformer layer)  -> RTD logits [B, T]
After pretraining the discriminator (its L-layer stack, i.e. the MWS representations) is the
encoder that is kept (§3.2, footnote 3).
"""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers

from teams_tf.configs import models as model_configs
from teams_tf.layers import candidate_sampler
from teams_tf.layers import mws_head
from teams_tf.layers import rtd_head as rtd_head_lib
from teams_tf.networks import shared_encoders


def _scatter_masked(values, positions, weights, shape):
  """Dense [B, T] tensor with `values` [B, P] at `positions` where weights > 0, else 0."""
  batch_index = tf.broadcast_to(
      tf.range(shape[0])[:, None], tf.shape(positions))
  indices = tf.stack([batch_index, positions], axis=-1)  # [B, P, 2]
  # Padded slots (weight 0) all point at position 0; multiplying by the weight makes their
  # contribution 0, and real masked positions are distinct, so the sum is the value itself.
  keep = tf.cast(weights > 0, values.dtype)
  return tf.scatter_nd(indices, values * keep, shape)


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class TeamsPretrainer(tf_keras.Model):
  """Generator + discriminator with attention-based RTD and MWS heads.

  Inputs (dict): `input_word_ids` [B, T] int32 (x^M: masked tokens replaced per the masking
  policy), `input_mask` [B, T] int32, `input_type_ids` [B, T] int32, `masked_lm_positions`
  [B, P] int32, `masked_lm_ids` [B, P] int32 (original tokens), `masked_lm_weights` [B, P]
  float32 (0 for padded slots).

  Outputs (dict):
    `mlm_logits`: [B, P, V] float32 generator logits (Eq. 2).
    `replaced_ids`: [B, P] int32 sampled x̂ (no gradient).
    `rtd_logits`: [B, T] float32 log-odds that x^R_i is original (Eq. 6).
    `rtd_labels`: [B, T] float32, 1 where x^R_i = x_i (every unmasked token, and masked ones
      whose sample equals the original), 0 where replaced.
    `mws_logits`: [B, P, K + 1] float32 candidate scores (Eq. 7); column 0 is the original.
    `candidate_ids`: [B, P, K + 1] int32 candidate sets S_i.
    `sequence_output`: [B, T, H] discriminator layer-L output (the kept representation).

  Gradients: the generator learns only from the MLM loss; sampling is wrapped in
  `tf.stop_gradient` and x^R enters the discriminator as token ids. The RTD and MWS losses
  reach the discriminator, the shared embeddings (MWS also through the candidate embeddings)
  and the shared bottom layers.
  """

  def __init__(self,
               generator_network,
               discriminator_network,
               rtd_head,
               num_negatives=5,
               candidate_sampling='sampled',
               rtd_head_input_layer=None,
               mlm_activation='gelu',
               mlm_initializer='glorot_uniform',
               seed=None,
               **kwargs):
    """Initializes the pretrainer.

    Args:
      generator_network: EncoderScaffold (dict outputs) producing h_G(x^M).
      discriminator_network: EncoderScaffold (dict outputs, all layer outputs) producing
        h_D(x^R); its embedding table is the tied table used by every head.
      rtd_head: an `AttentionRtdHead` (attention mask and logits for Eq. 6).
      num_negatives: K.
      candidate_sampling: 'sampled' or 'hardest'.
      rtd_head_input_layer: 1-based discriminator layer feeding the RTD task layer; None
        means L - 1 (paper default).
      mlm_activation: activation of the MLM and MWS transform layers.
      mlm_initializer: initializer of the MLM and MWS head kernels.
      seed: int seed of the sampling random stream; None draws one non-deterministically.
        The stream's state is a tracked variable, so it is checkpointed and resumes.
      **kwargs: Keras model arguments (`name`, ...).
    """
    super().__init__(**kwargs)
    num_layers = len(discriminator_network.hidden_layers)
    if rtd_head_input_layer is None:
      rtd_head_input_layer = num_layers - 1
    if not 1 <= rtd_head_input_layer <= num_layers:
      raise ValueError(
          f'rtd_head_input_layer={rtd_head_input_layer} must be in [1, {num_layers}] '
          '(1-based discriminator layer; paper default L - 1).')
    self._rtd_head_input_layer = rtd_head_input_layer
    self.generator_network = generator_network
    self.discriminator_network = discriminator_network
    embedding_table = discriminator_network.get_embedding_table()
    initializer = tf_keras.initializers.get(mlm_initializer)
    self.masked_lm = layers.MaskedLM(
        embedding_table=embedding_table,
        activation=tf_utils.get_activation(mlm_activation),
        initializer=tf_utils.clone_initializer(initializer),
        name='generator_predictions')
    self.candidate_sampler = candidate_sampler.CandidateSampler(
        num_negatives=num_negatives, strategy=candidate_sampling, name='candidate_sampler')
    self.mws_head = mws_head.MultiWordSelectionHead(
        embedding_table=embedding_table,
        activation=tf_utils.get_activation(mlm_activation),
        initializer=tf_utils.clone_initializer(initializer),
        name='mws_head')
    self.rtd_head = rtd_head
    self.attention_mask = layers.SelfAttentionMask()
    self._rng = (tf.random.Generator.from_seed(seed) if seed is not None
                 else tf.random.Generator.from_non_deterministic_state())

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
    mlm_logits = tf.cast(
        self.masked_lm(generator_outputs['sequence_output'], positions), tf.float32)

    samples = self.candidate_sampler(
        mlm_logits, original_ids, seed=self._rng.make_seeds(1)[:, 0])
    shape = tf.shape(word_ids)
    is_masked = _scatter_masked(tf.ones_like(weights), positions, weights, shape) > 0
    original = tf.where(
        is_masked, _scatter_masked(original_ids, positions, weights, shape), word_ids)
    corrupted = tf.where(
        is_masked, _scatter_masked(samples['replaced_ids'], positions, weights, shape),
        word_ids)
    rtd_labels = tf.cast(tf.equal(corrupted, original), tf.float32)

    discriminator_outputs = self.discriminator_network(
        [corrupted, input_mask, type_ids], training=training)
    layer_outputs = discriminator_outputs['encoder_outputs']
    rtd_input = layer_outputs[self._rtd_head_input_layer - 1]
    rtd_logits = self.rtd_head(
        rtd_input, self.attention_mask(rtd_input, input_mask), training=training)

    candidate_ids = tf.concat(
        [tf.cast(original_ids, tf.int32)[..., None], samples['negative_ids']], axis=-1)
    sequence_output = discriminator_outputs['sequence_output']
    mws_logits = self.mws_head(sequence_output, positions, candidate_ids)
    return dict(
        mlm_logits=mlm_logits,
        replaced_ids=samples['replaced_ids'],
        rtd_logits=rtd_logits,
        rtd_labels=rtd_labels,
        mws_logits=mws_logits,
        candidate_ids=candidate_ids,
        sequence_output=sequence_output)

  @property
  def checkpoint_items(self):
    """Extra top-level checkpoint entries (Model Garden's trainer saves them beside `model`).

    `encoder` is the kept discriminator stack laid out as Model Garden's `BertEncoderV2`, so
    fine-tuning tasks restore it with `encoder.type: bert_v2` and `init_checkpoint`.
    """
    return dict(encoder=shared_encoders.BertEncoderV2CheckpointView(self.discriminator_network))

  def get_config(self):
    raise NotImplementedError(
        'TeamsPretrainer shares layers between its networks and cannot be rebuilt from its '
        'config; use build_teams_pretrainer(TeamsConfig) and restore a checkpoint.')


def resolve_layout(config: model_configs.TeamsConfig):
  """Checks a TeamsConfig and resolves its defaults, without building anything.

  Tasks call this when they are created, so a bad value fails before any model is built.

  Args:
    config: a TeamsConfig.

  Returns:
    Dict with `num_generator_layers`, `num_shared_layers` and `rtd_head_input_layer`, each
    a resolved int.

  Raises:
    ValueError: naming the field, the bad value and the valid range.
  """
  num_layers = config.encoder.num_layers
  depth = config.generator_depth_fraction * num_layers
  if abs(depth - round(depth)) > 1e-6 or not 1 <= round(depth) <= num_layers:
    raise ValueError(
        f'generator_depth_fraction={config.generator_depth_fraction} of {num_layers} '
        f'discriminator layers gives {depth:g} generator layers; choose a fraction that '
        f'gives a whole number in [1, {num_layers}] (paper default 0.5).')
  depth = int(round(depth))
  num_shared = depth // 2 if config.num_shared_layers is None else config.num_shared_layers
  if not 0 <= num_shared <= depth:
    raise ValueError(
        f'num_shared_layers={config.num_shared_layers} must be in [0, {depth}] for a '
        f'{depth}-layer generator (0 = no tie, {depth} = full tie, None = bottom half).')
  rtd_layer = (num_layers - 1 if config.rtd_head_input_layer is None
               else config.rtd_head_input_layer)
  if not 1 <= rtd_layer <= num_layers:
    raise ValueError(
        f'rtd_head_input_layer={rtd_layer} must be in [1, {num_layers}] (1-based '
        'discriminator layer; None = L - 1, the paper default).')
  if config.candidate_sampling not in ('sampled', 'hardest'):
    raise ValueError(
        f"candidate_sampling={config.candidate_sampling!r} must be 'sampled' or 'hardest'.")
  if not 1 <= config.num_negatives < config.encoder.vocab_size:
    raise ValueError(
        f'num_negatives={config.num_negatives} must be in [1, vocab_size - 1 = '
        f'{config.encoder.vocab_size - 1}] (K non-original candidates; paper default 5).')
  return dict(num_generator_layers=depth, num_shared_layers=num_shared,
              rtd_head_input_layer=rtd_layer)


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
      num_shared_layers=layout['num_shared_layers'])
  # No TEAMS loss reads the pooled [CLS] output (there is no next-sentence task), so the poolers
  # stay out of the optimizer instead of being reported as variables without gradients.
  generator.pooler_layer.trainable = False
  discriminator.pooler_layer.trainable = False
  # The RTD task layer is one more transformer layer of the discriminator's width (§3.2).
  rtd_head = rtd_head_lib.AttentionRtdHead(
      **shared_encoders.transformer_block_kwargs(config.encoder), name='rtd_head')
  return TeamsPretrainer(
      generator_network=generator,
      discriminator_network=discriminator,
      rtd_head=rtd_head,
      num_negatives=config.num_negatives,
      candidate_sampling=config.candidate_sampling,
      rtd_head_input_layer=layout['rtd_head_input_layer'],
      mlm_activation=config.encoder.hidden_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=config.encoder.initializer_range),
      seed=seed,
      name='teams_pretrainer')
