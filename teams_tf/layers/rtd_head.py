"""Replaced-token-detection heads: attention-based (TEAMS §3.2, Eq. 6) and per-token FFN.

The head is one extra transformer layer (self-attention + one-hidden-layer FFN) fed by the
output of an intermediate discriminator layer (paper default: layer L-1), followed by the
linear logit w^T h_D^RTD(x^R)_i of Eq. (6). The discriminator's own top layer L keeps serving
the MWS task, so the two tasks get task-specific representations that still attend over the
whole sequence. `FfnRtdHead` is the per-token alternative (ELECTRA's head; TEAMS Table 3).
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


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class FfnRtdHead(tf_keras.layers.Layer):
  """Per-token feed-forward RTD head: ELECTRA's discriminator head, TEAMS Figure 2 (left).

  Dense(H) + activation, then the linear logit of Eq. (3)/(6). Each token is scored on its own
  representation; no attention inside the head (TEAMS Table 3 "Use FFN task heads", and the
  ELECTRA baseline).
  """

  def __init__(self, hidden_size, activation='gelu', kernel_initializer='glorot_uniform',
               **kwargs):
    """Initializes the head.

    Args:
      hidden_size: width of the hidden dense layer (ELECTRA: the discriminator's H).
      activation: activation of the hidden layer (ELECTRA: gelu).
      kernel_initializer: initializer of both kernels.
      **kwargs: Keras layer arguments (`name`, `dtype`, ...).
    """
    super().__init__(**kwargs)
    initializer = tf_keras.initializers.get(kernel_initializer)
    self._config = dict(hidden_size=hidden_size, activation=activation,
                        kernel_initializer=initializer)
    self.dense = tf_keras.layers.Dense(
        hidden_size, activation=tf_utils.get_activation(activation),
        kernel_initializer=tf_utils.clone_initializer(initializer), name='dense')
    self.classifier = tf_keras.layers.Dense(
        1, kernel_initializer=tf_utils.clone_initializer(initializer), name='classifier')

  def call(self, sequence_data, attention_mask=None, training=None):
    """Computes RTD logits.

    Args:
      sequence_data: [B, T, H] discriminator layer output.
      attention_mask: unused (a per-token head attends to nothing); accepted so that both RTD
        heads are called alike.
      training: unused (no dropout in the head).

    Returns:
      [B, T] float32 log-odds that each token of x^R is original.
    """
    del attention_mask, training
    return tf.cast(tf.squeeze(self.classifier(self.dense(sequence_data)), -1), tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update(
        hidden_size=self._config['hidden_size'],
        activation=tf_keras.activations.serialize(
            tf_utils.get_activation(self._config['activation'])),
        kernel_initializer=tf_keras.initializers.serialize(self._config['kernel_initializer']))
    return config
