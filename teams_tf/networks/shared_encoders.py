"""Generator and discriminator encoders with tied embeddings and shared bottom layers.

TEAMS §3.2 "Partial Layer Sharing": the generator has the discriminator's width, both use one
embedding network (ELECTRA's tied embeddings), and the bottom `num_shared_layers` generator
transformer layers *are* the discriminator's bottom layers (the same Keras layers, hence the
same variables). ELECTRA's generator is instead narrower and shares only the embeddings; each
encoder projects the shared E-wide embeddings to its own width. Both encoders are Model Garden
`EncoderScaffold`s over Model Garden's `PackedSequenceEmbedding` and `TransformerEncoderBlock`;
nothing here re-implements a transformer.
"""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling import networks


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


def _transformer_blocks(encoder_config, first, last, prefix):
  """TransformerEncoderBlocks for 0-based layer indices [first, last)."""
  kwargs = transformer_block_kwargs(encoder_config)
  return [
      layers.TransformerEncoderBlock(name=f'{prefix}transformer/layer_{i}', **kwargs)
      for i in range(first, last)
  ]


def build_embedding_network(encoder_config):
  """Word + position + type embeddings, LayerNorm and dropout, at the embedding width E.

  This is the part of the embeddings that ELECTRA ties between generator and discriminator
  (ELECTRA §3.2: token and positional embeddings, with their LayerNorm); each encoder adds its
  own projection to its hidden width (`build_encoder_embeddings`).

  Args:
    encoder_config: a `BertEncoderConfig`; `embedding_size` None means the hidden width.

  Returns:
    A Model Garden `PackedSequenceEmbedding` taking [input_word_ids, input_mask,
    input_type_ids] ([B, T] int32 each) and returning ([B, T, E] embeddings, [B, T, T] mask).
  """
  embedding_width = encoder_config.embedding_size or encoder_config.hidden_size
  return networks.PackedSequenceEmbedding(
      vocab_size=encoder_config.vocab_size,
      type_vocab_size=encoder_config.type_vocab_size,
      embedding_width=embedding_width,
      hidden_size=embedding_width,  # No projection inside: it is per encoder.
      max_seq_length=encoder_config.max_position_embeddings,
      initializer=tf_keras.initializers.TruncatedNormal(
          stddev=encoder_config.initializer_range),
      dropout_rate=encoder_config.dropout_rate,
      name='embeddings')


def build_encoder_embeddings(embedding_network, hidden_size, initializer_range, name):
  """One encoder's embedding network: the (shared) embeddings plus its own projection.

  Args:
    embedding_network: output of `build_embedding_network`, returning [B, T, E].
    hidden_size: H of the encoder.
    initializer_range: stddev of the projection's truncated-normal initializer.
    name: Keras name of the returned network.

  Returns:
    `embedding_network` itself when E == H; otherwise a functional Keras model over it that
    ends in a biased `embedding_projection` [E, H] (as in Model Garden's `BertEncoderV2`),
    returning ([B, T, H] embeddings, [B, T, T] mask).
  """
  embeddings, mask = embedding_network.outputs
  if embeddings.shape[-1] == hidden_size:
    return embedding_network
  inputs = [tf_keras.Input(shape=(None,), dtype=tf.int32, name=input_name)
            for input_name in ('input_word_ids', 'input_mask', 'input_type_ids')]
  embeddings, mask = embedding_network(inputs)
  projection = tf_keras.layers.EinsumDense(
      '...x,xy->...y', output_shape=hidden_size, bias_axes='y',
      kernel_initializer=tf_keras.initializers.TruncatedNormal(stddev=initializer_range),
      name='embedding_projection')
  return tf_keras.Model(inputs, [projection(embeddings), mask], name=name)


def build_encoder(encoder_config, embedding_network, blocks, name):
  """An `EncoderScaffold` over a given embedding network and list of transformer blocks.

  Args:
    encoder_config: a `BertEncoderConfig` (hidden width, pooler width and initializer).
    embedding_network: output of `build_embedding_network`, possibly shared; the encoder
      projects it to its hidden width with its own projection.
    blocks: list of transformer layers, bottom first; layers may be shared between encoders.
    name: Keras name of the encoder (part of the checkpoint format).

  Returns:
    An EncoderScaffold with dict outputs `sequence_output` [B, T, H], `pooled_output` [B, H]
    and `encoder_outputs` (list of every layer's [B, T, H] output, bottom first).
  """
  return networks.EncoderScaffold(
      pooled_output_dim=encoder_config.hidden_size,
      pooler_layer_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=encoder_config.initializer_range),
      embedding_cls=build_encoder_embeddings(
          embedding_network, encoder_config.hidden_size, encoder_config.initializer_range,
          name=f'{name}_embeddings'),
      embedding_data=embedding_network.get_embedding_table(),
      num_hidden_instances=len(blocks),
      hidden_cls=list(blocks),
      dict_outputs=True,
      name=name)


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


def build_generator_and_discriminator(encoder_config, num_generator_layers,
                                      num_shared_layers, generator_width_fraction=1.0):
  """Builds the TEAMS/ELECTRA encoder pair.

  Args:
    encoder_config: a `BertEncoderConfig` for the discriminator.
    num_generator_layers: generator depth, in [1, discriminator layers].
    num_shared_layers: bottom generator layers that are discriminator layers, in
      [0, num_generator_layers]; must be 0 unless the generator has the full width.
    generator_width_fraction: see `generator_encoder_config`.

  Returns:
    (generator, discriminator) EncoderScaffolds sharing one embedding network (each with its
    own projection to its width) and their bottom `num_shared_layers` transformer layers.

  Raises:
    ValueError: a depth, width or sharing count out of range, naming the bad value.
  """
  num_layers = encoder_config.num_layers
  if not 1 <= num_generator_layers <= num_layers:
    raise ValueError(
        f'The generator needs 1 to {num_layers} layers (the discriminator depth), '
        f'got {num_generator_layers}.')
  if not 0 <= num_shared_layers <= num_generator_layers:
    raise ValueError(
        f'num_shared_layers={num_shared_layers} must be in [0, {num_generator_layers}] '
        '(0 = no tie, generator depth = full tie).')
  generator_config = generator_encoder_config(encoder_config, generator_width_fraction)
  if num_shared_layers and generator_config.hidden_size != encoder_config.hidden_size:
    raise ValueError(
        f'num_shared_layers={num_shared_layers} needs a generator as wide as the '
        f'discriminator, but generator_width_fraction={generator_width_fraction}; set '
        'num_shared_layers=0 (ELECTRA ties only the embeddings) or the fraction to 1.')
  embedding_network = build_embedding_network(encoder_config)
  discriminator_blocks = _transformer_blocks(encoder_config, 0, num_layers, '')
  generator_blocks = discriminator_blocks[:num_shared_layers] + _transformer_blocks(
      generator_config, num_shared_layers, num_generator_layers, 'generator/')
  generator = build_encoder(
      generator_config, embedding_network, generator_blocks, name='generator')
  discriminator = build_encoder(
      encoder_config, embedding_network, discriminator_blocks, name='discriminator')
  return generator, discriminator


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
