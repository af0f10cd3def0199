"""The embedding networks of the encoders, and the embedding output their context builds on.

ELECTRA §3.2 ties the token and positional embeddings (with their LayerNorm) between generator
and discriminator; each encoder then projects the shared E-wide embeddings to its own width H.
`build_embedding_network` is the tied part, `build_encoder_embeddings` one encoder's view of it.
The projection is Model Garden `BertEncoderV2`'s, written as a rank-3 einsum that differentiates
without a [B, T, E, H] broadcast (`embedding_projection`); `use_rank3_embedding_projection` gives
Model Garden's own encoder the same.
"""

import tensorflow as tf
import tf_keras

from official.nlp.modeling import networks

from teams_tf.utils import upstream


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
  projection = embedding_projection(
      hidden_size, tf_keras.initializers.TruncatedNormal(stddev=initializer_range))
  return tf_keras.Model(inputs, [projection(embeddings), mask], name=name)


def embedding_projection(hidden_size, kernel_initializer):
  """The biased E -> H embedding projection, [B, T, E] -> [B, T, H], named as in BertEncoderV2.

  Model Garden's `BertEncoderV2` writes it as the einsum '...x,xy->...y'; TensorFlow differentiates
  an ellipsis einsum through a [B, T, E, H] broadcast, 90x slower than the explicit rank-3
  equation used here (0.74 vs 0.008 s per kernel gradient at B=32, T=128, E=128, H=256: a third
  of a TEAMS-small step, and both passes of a SCRIPT step). Same variables, same checkpoint.
  """
  return tf_keras.layers.EinsumDense(
      'btx,xy->bty', output_shape=(None, hidden_size), bias_axes='y',
      kernel_initializer=kernel_initializer, name='embedding_projection')


# BertEncoderV2's projection equation, which `use_rank3_embedding_projection` replaces.
_MODEL_GARDEN_PROJECTION = '...x,xy->...y'


def use_rank3_embedding_projection(encoder):
  """Gives a Model Garden `BertEncoderV2` the fast `embedding_projection`, before it is built.

  Args:
    encoder: an unbuilt `BertEncoderV2` (E may equal H: then there is no projection).

  Returns:
    `encoder`, whose projection computes the same function with the same variables and
    checkpoint names but differentiates without the [B, T, E, H] broadcast.
  """
  # pylint: disable=protected-access
  if not hasattr(encoder, '_embedding_projection'):
    raise upstream.changed('BertEncoderV2 has no _embedding_projection to make rank-3')
  projection = encoder._embedding_projection
  if projection is None:
    return encoder
  if (not isinstance(projection, tf_keras.layers.EinsumDense)
      or projection.equation != _MODEL_GARDEN_PROJECTION):
    raise upstream.changed(
        f"BertEncoderV2's embedding projection is a {type(projection).__name__} "
        f"({getattr(projection, 'equation', 'no equation')}), not the "
        f"EinsumDense('{_MODEL_GARDEN_PROJECTION}') that use_rank3_embedding_projection replaces")
  if projection.built:
    raise ValueError('use_rank3_embedding_projection needs an encoder that was never called '
                     '(its projection variables would be replaced).')
  encoder._embedding_projection = embedding_projection(
      projection.partial_output_shape[-1], projection.kernel_initializer)
  return encoder


def embedding_output(encoder, word_ids, type_ids):
  """[B, T, H] float: the input of the encoder's first Transformer layer, without dropout.

  The word, position and type embeddings after their LayerNorm, brought to the hidden width by
  the encoder's projection when the widths differ: what the encoder adds its context to. It is
  computed again from the embedding layers (a lookup and a LayerNorm), so the encoder's own call
  and outputs stay Model Garden's.

  Args:
    encoder: Model Garden's `BertEncoderV2`, or an encoder from `build_encoder`.
    word_ids: [B, T] int32 token ids.
    type_ids: [B, T] int32 segment ids.
  """
  if isinstance(encoder, networks.BertEncoderV2):
    # pylint: disable=protected-access
    embeddings = encoder._embedding_norm_layer(
        encoder._get_embeddings(word_ids, type_ids, None, None, None))
    if encoder._embedding_projection is not None:
      embeddings = encoder._embedding_projection(embeddings)
    # pylint: enable=protected-access
    return embeddings
  # The mask input only shapes the attention mask, which is not needed here.
  embeddings, _ = encoder.embedding_network([word_ids, tf.ones_like(word_ids), type_ids],
                                            training=False)
  return embeddings
