"""Generator and discriminator encoders with tied embeddings and shared bottom layers.

TEAMS §3.2 "Partial Layer Sharing": the generator has the discriminator's width, both use one
embedding network (ELECTRA's tied embeddings), and the bottom `num_shared_layers` generator
transformer layers *are* the discriminator's bottom layers (the same Keras layers, hence the
same variables). Both encoders are Model Garden `EncoderScaffold`s over Model Garden's
`PackedSequenceEmbedding` and `TransformerEncoderBlock`; nothing here re-implements a
transformer.
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
  """Word + position + type embeddings, LayerNorm, dropout, projection to the hidden width.

  Args:
    encoder_config: a `BertEncoderConfig`; `embedding_size` None means the hidden width.

  Returns:
    A Model Garden `PackedSequenceEmbedding` taking [input_word_ids, input_mask,
    input_type_ids] ([B, T] int32 each) and returning ([B, T, H] embeddings, [B, T, T] mask).
  """
  return networks.PackedSequenceEmbedding(
      vocab_size=encoder_config.vocab_size,
      type_vocab_size=encoder_config.type_vocab_size,
      embedding_width=encoder_config.embedding_size or encoder_config.hidden_size,
      hidden_size=encoder_config.hidden_size,
      max_seq_length=encoder_config.max_position_embeddings,
      initializer=tf_keras.initializers.TruncatedNormal(
          stddev=encoder_config.initializer_range),
      dropout_rate=encoder_config.dropout_rate,
      name='embeddings')


def build_encoder(encoder_config, embedding_network, blocks, name):
  """An `EncoderScaffold` over a given embedding network and list of transformer blocks.

  Args:
    encoder_config: a `BertEncoderConfig` (pooler width and initializer).
    embedding_network: output of `build_embedding_network`, possibly shared.
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
      embedding_cls=embedding_network,
      embedding_data=embedding_network.get_embedding_table(),
      num_hidden_instances=len(blocks),
      hidden_cls=list(blocks),
      dict_outputs=True,
      name=name)


def build_generator_and_discriminator(encoder_config, num_generator_layers,
                                      num_shared_layers):
  """Builds the TEAMS/ELECTRA encoder pair.

  Args:
    encoder_config: a `BertEncoderConfig` for the discriminator; the generator has the same
      width.
    num_generator_layers: generator depth, in [1, discriminator layers].
    num_shared_layers: bottom generator layers that are discriminator layers, in
      [0, num_generator_layers].

  Returns:
    (generator, discriminator) EncoderScaffolds sharing one embedding network and their
    bottom `num_shared_layers` transformer layers.

  Raises:
    ValueError: a depth or sharing count out of range, naming the bad value.
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
  embedding_network = build_embedding_network(encoder_config)
  discriminator_blocks = _transformer_blocks(encoder_config, 0, num_layers, '')
  generator_blocks = discriminator_blocks[:num_shared_layers] + _transformer_blocks(
      encoder_config, num_shared_layers, num_generator_layers, 'generator/')
  generator = build_encoder(
      encoder_config, embedding_network, generator_blocks, name='generator')
  discriminator = build_encoder(
      encoder_config, embedding_network, discriminator_blocks, name='discriminator')
  return generator, discriminator


class _ProjectionWithZeroBias(tf.Module):
  """`PackedSequenceEmbedding`'s bias-free projection as `BertEncoderV2`'s biased one.

  BertEncoderV2 adds a bias after the embedding projection; ours has none, which equals a bias
  of zeros. The zero bias is a constant of the view, saved so that restoring into BertEncoderV2
  leaves no variable unmatched.
  """

  def __init__(self, projection):
    super().__init__(name=None)
    self.kernel = projection.kernel
    self.bias = tf.Variable(
        tf.zeros(projection.kernel.shape[-1:], projection.kernel.dtype), trainable=False,
        name='embedding_projection_bias')


class BertEncoderV2CheckpointView(tf.Module):
  """The layers of an `EncoderScaffold` from `build_encoder`, named as in `BertEncoderV2`.

  Object-based checkpoints match variables by the attribute path to them. Saving this view under
  the `encoder` key makes a pretraining checkpoint restorable into Model Garden's `BertEncoderV2`
  (encoder type `bert_v2`), which every Model Garden fine-tuning task and export tool builds, with
  no conversion step. The view holds the very same layer objects, so it adds no variables.
  """

  def __init__(self, encoder):
    """Wraps `encoder`, an EncoderScaffold over `build_embedding_network` and transformer blocks."""
    super().__init__(name=None)
    embedding = encoder.embedding_network
    # pylint: disable=protected-access
    self._embedding_layer = embedding.get_layer('word_embeddings')
    self._position_embedding_layer = embedding.get_layer('position_embedding')
    self._type_embedding_layer = embedding.get_layer('type_embeddings')
    self._embedding_norm_layer = embedding.get_layer('embeddings/layer_norm')
    if any(layer.name == 'embedding_projection' for layer in embedding.layers):
      self._embedding_projection = _ProjectionWithZeroBias(
          embedding.get_layer('embedding_projection'))
    self._transformer_layers = list(encoder.hidden_layers)
    self._pooler_layer = encoder.pooler_layer
    # pylint: enable=protected-access
