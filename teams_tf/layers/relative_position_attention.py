"""Self-attention with a T5 relative position bias (Raffel et al., 2020, §2.1), as in COCO-LM §4.

COCO-LM's Transformers are BERT's plus "T5 relative position encoding": a learned scalar per
attention head and relative-distance bucket (32 buckets, log-spaced beyond 8 positions, up to
128), added to the attention logits of every layer. The table is shared by all layers of one
encoder (one Model Garden `RelativePositionBias`, handed to every layer's attention), and the
absolute position embeddings stay. Everything else is Keras' multi-head attention, so the layer
plugs into Model Garden's `TransformerScaffold` as its `attention_cls`.
"""

import math

import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class RelativePositionAttention(tf_keras.layers.MultiHeadAttention):
  """Multi-head attention whose logits get a (shared) T5 relative position bias."""

  def __init__(self, position_bias, **kwargs):
    """Initializes the layer.

    Args:
      position_bias: a Model Garden `layers.RelativePositionBias` with this layer's number of
        heads, shared by every layer of the encoder.
      **kwargs: `tf_keras.layers.MultiHeadAttention` arguments (`num_heads`, `key_dim`,
        `dropout`, initializers, `name`, ...).
    """
    super().__init__(**kwargs)
    if position_bias.num_heads != self._num_heads:
      raise ValueError(f'The relative position bias has {position_bias.num_heads} heads but '
                       f'the attention has {self._num_heads}; build one bias per encoder width.')
    self.position_bias = position_bias

  def _compute_attention(self, query, key, value, attention_mask=None, training=None):
    """Scaled dot-product attention plus the position bias.

    Args:
      query: [B, T, N, d] projected queries.
      key: [B, S, N, d] projected keys.
      value: [B, S, N, d] projected values.
      attention_mask: [B, T, S] boolean, False where attention is not allowed.
      training: whether attention dropout is applied.

    Returns:
      ([B, T, N, d] attention output, [B, N, T, S] attention probabilities). Differentiable
      w.r.t. the inputs and the bias table.
    """
    query = tf.multiply(query, 1.0 / math.sqrt(float(self._key_dim)))
    scores = tf.einsum(self._dot_product_equation, key, query)  # [B, N, T, S]
    # The bias depends only on the two lengths: look it up once, not per example.
    bias = self.position_bias(query[:1, :, 0, :], key[:1, :, 0, :])  # [1, N, T, S]
    scores += tf.cast(bias, scores.dtype)
    probabilities = self._masked_softmax(scores, attention_mask)
    output = tf.einsum(self._combine_equation,
                       self._dropout_layer(probabilities, training=training), value)
    return output, probabilities

  def get_config(self):
    raise NotImplementedError(
        'RelativePositionAttention shares its position bias with the other layers of its '
        'encoder and cannot be rebuilt from its config; rebuild the encoder with '
        'networks.shared_encoders instead.')


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class ScaledRelativePositionBias(layers.RelativePositionBias):
  """Model Garden's T5 bias table, read as `scale` times its stored values.

  The reparameterisation changes only how fast the bias learns: under Adam a parameter moves
  about one learning rate per step, so with `scale` = s the bias moves s times faster, while an
  initializer divided by s keeps its initial values. A bias needs values of several logits to
  point a head at its neighbours; at scale 1 and a learning rate of 1e-3 that takes thousands of
  steps (T5 trains it with Adafactor, whose steps are relative to the parameter's scale).
  """

  def __init__(self, scale=1.0, **kwargs):
    """Initializes the table.

    Args:
      scale: s > 0, the factor between stored values and the bias added to attention logits.
      **kwargs: `layers.RelativePositionBias` arguments.
    """
    super().__init__(**kwargs)
    self.scale = scale

  def call(self, query, key):
    """[B, N, T, S] bias: `scale` times Model Garden's."""
    return self.scale * super().call(query, key)

  def get_config(self):
    return dict(super().get_config(), scale=self.scale)


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class RelativePositionTransformerLayer(layers.TransformerScaffold):
  """Model Garden's `TransformerScaffold` with a standard pre-LN block (Xiong et al., 2020).

  Post-LN blocks are the scaffold's own. In pre-LN blocks (`norm_first`) the scaffold departs
  from Model Garden's `TransformerEncoderBlock` twice: its attention reads keys and values from
  the un-normalised layer input (only the queries are normalised), and it adds a float32
  feed-forward output to a residual in the compute dtype, which fails under `mixed_bfloat16`.
  Here the attention reads the normalised input throughout, as `TransformerEncoderBlock` does,
  and both residual adds keep the dtype of the layer input. Same sublayers and variables as the
  scaffold, so checkpoints restore either way.
  """

  def call(self, inputs, training=None):
    """[B, T, H] layer output of ([B, T, H] input, [B, T, T] attention mask)."""
    if not self._norm_first or self._feedforward_block is not None:
      return super().call(inputs, training=training)
    input_tensor, attention_mask = inputs
    normalized = self._attention_layer_norm(input_tensor, training=training)
    attention_output = self._attention_layer(
        query=normalized, value=normalized, attention_mask=attention_mask, training=training)
    residual = input_tensor + tf.cast(
        self._attention_dropout(attention_output, training=training), input_tensor.dtype)
    hidden = self._intermediate_activation_layer(
        self._intermediate_dense(self._output_layer_norm(residual, training=training)))
    layer_output = self._output_dropout(self._output_dense(hidden, training=training),
                                        training=training)
    return residual + tf.cast(layer_output, residual.dtype)
