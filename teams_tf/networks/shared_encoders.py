"""Generator and discriminator encoders with tied embeddings and shared bottom layers.

TEAMS §3.2 "Partial Layer Sharing": the generator has the discriminator's width, both use one
embedding network (ELECTRA's tied embeddings), and the bottom `num_shared_layers` generator
transformer layers *are* the discriminator's bottom layers (the same Keras layers, hence the
same variables). ELECTRA's generator is instead narrower and shares only the embeddings; each
encoder projects the shared E-wide embeddings to its own width. Both encoders are Model Garden
`EncoderScaffold`s over Model Garden's `PackedSequenceEmbedding` and `TransformerEncoderBlock`;
nothing here re-implements a transformer. With a T5 relative position bias (COCO-LM §4) the blocks
are Model Garden `TransformerScaffold`s (`RelativePositionTransformerLayer`, with a standard pre-LN
path) whose attention adds the bias, one bias table per encoder.
"""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.modeling.hyperparams import base_config
from official.nlp.modeling import layers
from official.nlp.modeling import networks

from teams_tf.configs import encoders as encoder_configs
from teams_tf.layers import relative_position_attention
from teams_tf.networks import encoder_embeddings


def transformer_block_kwargs(encoder_config):
  """Keyword arguments of a `TransformerEncoderBlock` of the given encoder width.

  Args:
    encoder_config: a `BertEncoderConfig`.

  Returns:
    Dict of TransformerEncoderBlock arguments (without `name`), the same ones Model Garden's
    `BertEncoderV2` uses for its blocks.
  """
  return dict(
      num_attention_heads=encoder_config.num_attention_heads,
      inner_dim=encoder_config.intermediate_size,
      inner_activation=tf_utils.get_activation(encoder_config.hidden_activation),
      output_dropout=encoder_config.dropout_rate,
      attention_dropout=encoder_config.attention_dropout_rate,
      norm_first=encoder_config.norm_first,
      kernel_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=encoder_config.initializer_range))


def build_position_bias(encoder_config, num_buckets, max_distance, name, scale=1.0):
  """The T5 relative position bias table [buckets, heads] shared by one encoder's layers.

  Args:
    encoder_config: a `BertEncoderConfig` (heads and initializer range).
    num_buckets: relative-distance buckets, half per direction (COCO-LM/T5: 32).
    max_distance: distance beyond which all distances share a bucket (COCO-LM/T5: 128).
    name: Keras name of the layer.
    scale: the bias is `scale` times the stored table (`ScaledRelativePositionBias`).

  Returns:
    A `relative_position_attention.ScaledRelativePositionBias` (Model Garden's
    `layers.RelativePositionBias`), bidirectional, whose bias starts like the other embeddings
    (truncated normal with the encoder's initializer range) whatever the scale.
  """
  return relative_position_attention.ScaledRelativePositionBias(
      scale=scale,
      num_heads=encoder_config.num_attention_heads,
      relative_attention_num_buckets=num_buckets,
      relative_attention_max_distance=max_distance,
      bidirectional=True,
      embeddings_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=encoder_config.initializer_range / scale),
      name=name)


def validate_relative_positions(num_buckets, max_distance, scale=1.0):
  """Checks T5 bias settings (0 buckets: none); ValueError names the field and the fix."""
  if not num_buckets:
    return
  if num_buckets < 4 or num_buckets % 2:
    raise ValueError(f'relative_position_num_buckets={num_buckets} must be even and >= 4 (half '
                     'per direction, each half exact then log-spaced; COCO-LM: 32).')
  if max_distance <= num_buckets // 4:
    raise ValueError(f'relative_position_max_distance={max_distance} must exceed the '
                     f'{num_buckets // 4} exactly-bucketed distances (COCO-LM: 128).')
  if not scale > 0:
    raise ValueError(f'relative_position_bias_scale={scale} must be > 0 (1: the table is the '
                     'bias, as in T5 and COCO-LM).')


def _relative_position_block(encoder_config, position_bias, name):
  """A layer like `TransformerEncoderBlock` (post- or pre-LN), its attention plus the bias."""
  kwargs = transformer_block_kwargs(encoder_config)
  attention = relative_position_attention.RelativePositionAttention(
      position_bias=position_bias,
      num_heads=encoder_config.num_attention_heads,
      key_dim=encoder_config.hidden_size // encoder_config.num_attention_heads,
      dropout=encoder_config.attention_dropout_rate,
      kernel_initializer=tf_utils.clone_initializer(kwargs['kernel_initializer']),
      name='self_attention')
  return relative_position_attention.RelativePositionTransformerLayer(
      num_attention_heads=encoder_config.num_attention_heads,
      inner_dim=kwargs['inner_dim'],
      inner_activation=kwargs['inner_activation'],
      attention_cls=attention,
      dropout_rate=kwargs['output_dropout'],
      attention_dropout_rate=kwargs['attention_dropout'],
      norm_first=kwargs['norm_first'],
      kernel_initializer=kwargs['kernel_initializer'],
      name=name)


def _transformer_blocks(encoder_config, first, last, prefix, position_bias=None):
  """Transformer layers for 0-based layer indices [first, last).

  Model Garden `TransformerEncoderBlock`s, or, given a `RelativePositionBias`, layers whose
  attention adds that (shared) bias.
  """
  if position_bias is not None:
    return [_relative_position_block(encoder_config, position_bias,
                                     f'{prefix}transformer/layer_{i}')
            for i in range(first, last)]
  kwargs = transformer_block_kwargs(encoder_config)
  return [
      layers.TransformerEncoderBlock(name=f'{prefix}transformer/layer_{i}', **kwargs)
      for i in range(first, last)
  ]


class SharedLayerEncoder(networks.EncoderScaffold):
  """Model Garden's `EncoderScaffold` over layer instances that other encoders may share.

  Its config would hold those instances, so it cannot be rebuilt from it; saying so (Keras skips
  such configs) lets Keras SavedModel export trace it, e.g. in Model Garden's TF Hub export.
  """

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    # EncoderScaffold logs its config while it is constructed; refuse it only afterwards.
    self._constructed = True

  def get_config(self):
    if not getattr(self, '_constructed', False):
      return super().get_config()
    raise NotImplementedError(
        'This encoder is built from layer instances (possibly shared with another encoder) and '
        'cannot be rebuilt from its config; rebuild it with networks.shared_encoders.')


def build_encoder(encoder_config, embedding_network, blocks, name):
  """An `EncoderScaffold` over a given embedding network and list of transformer blocks.

  Args:
    encoder_config: a `BertEncoderConfig` (hidden width, pooler width and initializer).
    embedding_network: output of `encoder_embeddings.build_embedding_network`, possibly
      shared; the encoder projects it to its hidden width with its own projection.
    blocks: list of transformer layers, bottom first; layers may be shared between encoders.
    name: Keras name of the encoder (part of the checkpoint format).

  Returns:
    A `SharedLayerEncoder` (an EncoderScaffold) with dict outputs `sequence_output` [B, T, H],
    `pooled_output` [B, H] and `encoder_outputs` (list of every layer's [B, T, H] output, bottom
    first). With pre-LN blocks (`norm_first`) the last output passes a final LayerNorm
    ('final_layer_norm'), as in every pre-LN Transformer (GPT-2, Cramming): its blocks add
    un-normalized residuals, so without it the heads read a stream whose scale grows with depth.
    Model Garden's `BertEncoderV2` has no such layer, so these encoders are kept as themselves
    (`has_bert_v2_layout`).
  """
  return SharedLayerEncoder(
      layer_norm_before_pooling=encoder_config.norm_first,
      pooled_output_dim=encoder_config.hidden_size,
      pooler_layer_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=encoder_config.initializer_range),
      embedding_cls=encoder_embeddings.build_encoder_embeddings(
          embedding_network, encoder_config.hidden_size, encoder_config.initializer_range,
          name=f'{name}_embeddings'),
      embedding_data=embedding_network.get_embedding_table(),
      num_hidden_instances=len(blocks),
      hidden_cls=list(blocks),
      dict_outputs=True,
      name=name)


def has_bert_v2_layout(encoder):
  """Whether `BertEncoderV2CheckpointView` can lay `encoder` out as Model Garden's encoder.

  False for blocks with a relative position bias and for a final LayerNorm (pre-LN encoders),
  neither of which `BertEncoderV2` has; such encoders are checkpointed as themselves and
  fine-tune through `configs.encoders.RelativePositionEncoderConfig`.
  """
  return (isinstance(encoder.hidden_layers[0], layers.TransformerEncoderBlock) and
          not any(layer.name == 'final_layer_norm' for layer in encoder.layers))


def generator_encoder_config(encoder_config, width_fraction):
  """The discriminator's `BertEncoderConfig` scaled in width, for ELECTRA's small generators.

  Args:
    encoder_config: the discriminator's `BertEncoderConfig`.
    width_fraction: multiplier of hidden size, intermediate size and attention heads (ELECTRA
      Table 6: 1/4 small, 1/3 base, 1/4 large; TEAMS: 1). The embedding width is kept, since the
      embeddings are tied.

  Returns:
    A new BertEncoderConfig.

  Raises:
    ValueError: a fraction that does not give whole numbers of units and heads.
  """
  scaled = {}
  for field in ('hidden_size', 'intermediate_size', 'num_attention_heads'):
    value = getattr(encoder_config, field) * width_fraction
    if abs(value - round(value)) > 1e-6 or round(value) < 1:
      raise ValueError(
          f'generator_width_fraction={width_fraction} gives {field}={value:g} for a '
          f'discriminator {field} of {getattr(encoder_config, field)}; choose a fraction that '
          'gives whole, positive sizes (ELECTRA: 1/4 small, 1/3 base, 1/4 large).')
    scaled[field] = int(round(value))
  config = encoder_config.replace(**scaled)
  # Tied embeddings keep the discriminator's width (ELECTRA: "embeddings the size of the
  # discriminator's hidden states"), which the generator then projects to its own width.
  config.embedding_size = encoder_config.embedding_size or encoder_config.hidden_size
  return config


def check_encoder_pair(encoder_config, num_generator_layers, num_shared_layers,
                       generator_width_fraction=1.0):
  """Checks the shape of a generator/discriminator pair; returns the generator's encoder config.

  The pretrainer configs (TEAMS, ELECTRA, COCO-LM) call it when a task is created, before any
  model is built; `build_generator_and_discriminator` calls it again.

  Args:
    encoder_config: a `BertEncoderConfig` for the discriminator.
    num_generator_layers: generator depth, in [1, discriminator layers].
    num_shared_layers: bottom generator layers that are discriminator layers, in
      [0, num_generator_layers]; must be 0 unless the generator has the full width.
    generator_width_fraction: see `generator_encoder_config`.

  Raises:
    ValueError: a depth, width or sharing count out of range, naming the field and the fix.
  """
  num_layers = encoder_config.num_layers
  if not 1 <= num_generator_layers <= num_layers:
    raise ValueError(
        f'num_generator_layers={num_generator_layers} must be in [1, {num_layers}] (at most the '
        'discriminator depth).')
  if not 0 <= num_shared_layers <= num_generator_layers:
    raise ValueError(
        f'num_shared_layers={num_shared_layers} must be in [0, {num_generator_layers}] for a '
        f'{num_generator_layers}-layer generator (0 = no tie, {num_generator_layers} = full tie).')
  generator_config = generator_encoder_config(encoder_config, generator_width_fraction)
  if num_shared_layers and generator_width_fraction != 1:
    raise ValueError(
        f'num_shared_layers={num_shared_layers} needs a full-width generator, but '
        f'generator_width_fraction={generator_width_fraction}; set num_shared_layers=0 (ELECTRA '
        'ties only the embeddings) or the fraction to 1.')
  return generator_config


def build_generator_and_discriminator(encoder_config, num_generator_layers,
                                      num_shared_layers, generator_width_fraction=1.0,
                                      relative_position_num_buckets=0,
                                      relative_position_max_distance=128,
                                      relative_position_bias_scale=1.0):
  """Builds the TEAMS/ELECTRA/COCO-LM encoder pair.

  Args:
    encoder_config, num_generator_layers, num_shared_layers, generator_width_fraction: the
      pair's shape, as `check_encoder_pair` checks it.
    relative_position_num_buckets: 0 for absolute positions only; otherwise every layer adds a
      T5 relative position bias with this many buckets (COCO-LM §4): one table per encoder, or
      one for both when they share layers.
    relative_position_max_distance: see `build_position_bias`.
    relative_position_bias_scale: see `build_position_bias`.

  Returns:
    (generator, discriminator) EncoderScaffolds sharing one embedding network (each with its
    own projection to its width) and their bottom `num_shared_layers` transformer layers.

  Raises:
    ValueError: a depth, width or sharing count out of range, naming the bad value.
  """
  num_layers = encoder_config.num_layers
  generator_config = check_encoder_pair(encoder_config, num_generator_layers, num_shared_layers,
                                        generator_width_fraction)
  generator_bias = discriminator_bias = None
  if relative_position_num_buckets:
    discriminator_bias = build_position_bias(encoder_config, relative_position_num_buckets,
                                             relative_position_max_distance,
                                             'relative_position_bias',
                                             relative_position_bias_scale)
    # Shared layers read one table (full width, so the same heads); else each encoder its own.
    generator_bias = discriminator_bias if num_shared_layers else build_position_bias(
        generator_config, relative_position_num_buckets, relative_position_max_distance,
        'generator/relative_position_bias', relative_position_bias_scale)
  embedding_network = encoder_embeddings.build_embedding_network(encoder_config)
  discriminator_blocks = _transformer_blocks(
      encoder_config, 0, num_layers, '', discriminator_bias)
  generator_blocks = discriminator_blocks[:num_shared_layers] + _transformer_blocks(
      generator_config, num_shared_layers, num_generator_layers, 'generator/', generator_bias)
  generator = build_encoder(
      generator_config, embedding_network, generator_blocks, name='generator')
  discriminator = build_encoder(
      encoder_config, embedding_network, discriminator_blocks, name='discriminator')
  return generator, discriminator


def build_single_encoder(encoder_config, relative_position_num_buckets=0,
                         relative_position_max_distance=128, name='encoder',
                         relative_position_bias_scale=1.0):
  """One encoder built like the discriminator of `build_generator_and_discriminator`.

  Its object graph is the discriminator's, so a pretraining checkpoint's discriminator restores
  into it (fine-tuning a relative-position encoder, COCO-LM without an auxiliary model).

  Args:
    encoder_config: a `BertEncoderConfig`.
    relative_position_num_buckets: 0 for absolute positions only, else the T5 bias buckets.
    relative_position_max_distance: see `build_position_bias`.
    name: Keras name of the encoder.
    relative_position_bias_scale: see `build_position_bias`.

  Returns:
    An EncoderScaffold with the outputs described in `build_encoder`.
  """
  position_bias = None
  if relative_position_num_buckets:
    position_bias = build_position_bias(encoder_config, relative_position_num_buckets,
                                        relative_position_max_distance, 'relative_position_bias',
                                        relative_position_bias_scale)
  blocks = _transformer_blocks(encoder_config, 0, encoder_config.num_layers, '', position_bias)
  embedding_network = encoder_embeddings.build_embedding_network(encoder_config)
  return build_encoder(encoder_config, embedding_network, blocks, name)


@base_config.bind(encoder_configs.RelativePositionEncoderConfig)
def build_relative_position_encoder(config):
  """Model Garden's builder for `EncoderConfig(type='any', any=RelativePositionEncoderConfig)`.

  Fine-tuning tasks (`SentencePredictionTask`, `QuestionAnsweringTask`) call it through
  `official.nlp.configs.encoders.build_encoder`; it returns `build_single_encoder`'s encoder.
  """
  return build_single_encoder(
      config, relative_position_num_buckets=config.relative_position_num_buckets,
      relative_position_max_distance=config.relative_position_max_distance,
      relative_position_bias_scale=config.relative_position_bias_scale)


class BertEncoderV2CheckpointView(tf.Module):
  """The layers of an `EncoderScaffold` from `build_encoder`, named as in `BertEncoderV2`.

  Object-based checkpoints match variables by the attribute path to them. Saving this view under
  the `encoder` key makes a pretraining checkpoint restorable into Model Garden's `BertEncoderV2`
  (encoder type `bert_v2`), which every Model Garden fine-tuning task and export tool builds, with
  no conversion step. The view holds the very same layer objects, so it adds no variables.
  """

  def __init__(self, encoder, transformer_layers=None):
    """Wraps an encoder.

    Args:
      encoder: an EncoderScaffold from `build_encoder`.
      transformer_layers: the kept stack, bottom first, when it is not the encoder's own layers
        (e.g. TEAMS' RTD branch or an extra task layer on top); default `encoder.hidden_layers`.
        BertEncoderV2 must then be built with `num_layers=len(transformer_layers)`.
    """
    super().__init__(name=None)
    embedding = encoder.embedding_network
    # `build_encoder_embeddings` wraps the shared embeddings when it adds a projection.
    projected = any(layer.name == 'embedding_projection' for layer in embedding.layers)
    shared = embedding.get_layer('embeddings') if projected else embedding
    # pylint: disable=protected-access
    self._embedding_layer = shared.get_layer('word_embeddings')
    self._position_embedding_layer = shared.get_layer('position_embedding')
    self._type_embedding_layer = shared.get_layer('type_embeddings')
    self._embedding_norm_layer = shared.get_layer('embeddings/layer_norm')
    if projected:
      self._embedding_projection = embedding.get_layer('embedding_projection')
    self._transformer_layers = list(
        encoder.hidden_layers if transformer_layers is None else transformer_layers)
    self._pooler_layer = encoder.pooler_layer
    # pylint: enable=protected-access
