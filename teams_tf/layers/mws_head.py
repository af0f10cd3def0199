"""Multi-word selection head, TEAMS Eq. (7).

Scores each candidate x' of the set S_i at masked position i with e(x')^T h_D^MWS(x^R)_i, where
e is the (tied) token embedding table. The discriminator's hidden width H may differ from the
embedding width E (small models: H=256, E=128), so h is first mapped to E by the same
transform BERT and ELECTRA use before their output softmax (dense + activation + LayerNorm);
as in Eq. (7) there is no per-token output bias.
"""

import gin
import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


@gin.configurable(module='teams_tf', allowlist=['layer_norm_epsilon'])
@tf_keras.utils.register_keras_serializable(package='teams_tf')
class MultiWordSelectionHead(tf_keras.layers.Layer):
  """Scores candidate sets against the discriminator's MWS representations."""

  def __init__(self,
               embedding_table,
               activation='gelu',
               initializer='glorot_uniform',
               layer_norm_epsilon=1e-12,
               **kwargs):
    """Initializes the head.

    Args:
      embedding_table: [V, E] token embedding variable, shared with the encoders.
      activation: activation of the transform dense layer.
      initializer: kernel initializer of the transform dense layer.
      layer_norm_epsilon: epsilon of the transform LayerNorm (gin-bindable; not in the paper).
      **kwargs: Keras layer arguments (`name`, `dtype`, ...).
    """
    super().__init__(**kwargs)
    self.embedding_table = embedding_table
    self._activation = activation
    self._initializer = tf_keras.initializers.get(initializer)
    self._layer_norm_epsilon = layer_norm_epsilon

  def build(self, input_shape):
    embedding_width = self.embedding_table.shape[-1]
    self.dense = tf_keras.layers.Dense(
        embedding_width,
        activation=self._activation,
        kernel_initializer=tf_utils.clone_initializer(self._initializer),
        name='transform/dense')
    self.layer_norm = tf_keras.layers.LayerNormalization(
        axis=-1, epsilon=self._layer_norm_epsilon, name='transform/LayerNorm')
    super().build(input_shape)

  def call(self, sequence_data, masked_positions, candidate_ids):
    """Computes candidate logits.

    Args:
      sequence_data: [B, T, H] discriminator MWS representations h_D^MWS(x^R).
      masked_positions: [B, P] int positions of the masked tokens.
      candidate_ids: [B, P, K + 1] int candidate token ids (column 0: the original).

    Returns:
      [B, P, K + 1] float32 logits; differentiable w.r.t. the sequence, the transform and the
      candidate embeddings.
    """
    hidden = tf.gather(sequence_data, masked_positions, batch_dims=1)  # [B, P, H]
    query = self.layer_norm(self.dense(hidden))  # [B, P, E]
    candidates = tf.gather(self.embedding_table, candidate_ids)  # [B, P, K + 1, E]
    logits = tf.einsum('bpe,bpce->bpc', query, tf.cast(candidates, query.dtype))
    return tf.cast(logits, tf.float32)

  def get_config(self):
    raise NotImplementedError(
        'MultiWordSelectionHead holds the shared embedding table and cannot be rebuilt from '
        'its config; rebuild the pretrainer with build_teams_pretrainer instead.')
