"""Attention-based replaced-token-detection head, TEAMS §3.2 and Eq. (6).

The head is one extra transformer layer (self-attention + one-hidden-layer FFN) fed by the
output of an intermediate discriminator layer (paper default: layer L-1), followed by the
linear logit w^T h_D^RTD(x^R)_i of Eq. (6). The discriminator's own top layer L keeps serving
the MWS task, so the two tasks get task-specific representations that still attend over the
whole sequence.
"""

import gin
import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers


@gin.configurable(module='teams_tf', allowlist=['norm_epsilon'])
@tf_keras.utils.register_keras_serializable(package='teams_tf')
class AttentionRtdHead(tf_keras.layers.Layer):
  """One transformer layer followed by a per-token logit that the token is original."""

  def __init__(self,
               num_attention_heads,
               inner_dim,
               inner_activation='gelu',
               output_dropout=0.1,
               attention_dropout=0.1,
               norm_first=False,
               kernel_initializer='glorot_uniform',
               norm_epsilon=1e-12,
               **kwargs):
    """Initializes the head; the transformer arguments match the encoder's blocks.

    Args:
      num_attention_heads: attention heads of the task layer.
      inner_dim: FFN hidden width of the task layer.
      inner_activation: FFN activation.
      output_dropout: dropout after attention and FFN.
      attention_dropout: dropout on attention probabilities.
      norm_first: pre-LN if True, post-LN (BERT) if False.
      kernel_initializer: initializer for every kernel in the head.
      norm_epsilon: LayerNorm epsilon of the task layer (gin-bindable; not in the paper).
      **kwargs: Keras layer arguments (`name`, `dtype`, ...).
    """
    super().__init__(**kwargs)
    initializer = tf_keras.initializers.get(kernel_initializer)
    self._config = dict(
        num_attention_heads=num_attention_heads,
        inner_dim=inner_dim,
        inner_activation=inner_activation,
        output_dropout=output_dropout,
        attention_dropout=attention_dropout,
        norm_first=norm_first,
        kernel_initializer=initializer,
        norm_epsilon=norm_epsilon)
    self.task_layer = layers.TransformerEncoderBlock(
        **dict(self._config, kernel_initializer=tf_utils.clone_initializer(initializer)),
        name='task_layer')
    self.classifier = tf_keras.layers.Dense(
        1, kernel_initializer=tf_utils.clone_initializer(initializer), name='classifier')

  def call(self, sequence_data, attention_mask, training=None):
    """Computes RTD logits.

    Args:
      sequence_data: [B, T, H] output of discriminator layer `rtd_head_input_layer`.
      attention_mask: [B, T, T] self-attention mask (1 = may attend).
      training: Keras training flag (dropout).

    Returns:
      [B, T] float32 log-odds that each token of x^R is original; differentiable w.r.t. the
      input sequence and all head weights.
    """
    hidden = self.task_layer([sequence_data, attention_mask], training=training)
    return tf.cast(tf.squeeze(self.classifier(hidden), -1), tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update(self._config)
    config.update(
        inner_activation=tf_keras.activations.serialize(
            tf_keras.activations.get(self._config['inner_activation'])),
        kernel_initializer=tf_keras.initializers.serialize(self._config['kernel_initializer']))
    return config
