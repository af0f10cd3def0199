"""Corrective language modeling head, COCO-LM §3.3.

Two outputs on the main Transformer's last layer h:
  - the copy logit w_copy^T h_i (+ bias) on every token: log-odds that the input token is
    original (p_copy of Eq. 2, a binary classification layer as in RTD);
  - language-model logits x^T h_i + b over the vocabulary, with the input embedding table x
    tied (Eq. 2 has no transform before the dot product; the output bias is BERT's).
When the hidden width H differs from the embedding width E (small: 256 vs 128), h is first
mapped to E by a linear projection, the least the dot product needs.
"""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class CorrectiveLmHead(tf_keras.layers.Layer):
  """Copy logits on all tokens and tied-embedding LM logits at chosen positions."""

  def __init__(self, embedding_table, initializer='glorot_uniform', with_lm=True, **kwargs):
    """Initializes the head.

    Args:
      embedding_table: [V, E] token embedding variable, shared with the encoder.
      initializer: kernel initializer of the copy layer and the projection.
      with_lm: build the language-model output; False leaves only the copy (RTD) layer
        (COCO-LM Table 3 "RTD Only", "SCL + RTD").
      **kwargs: Keras layer arguments (`name`, `dtype`, ...).
    """
    super().__init__(**kwargs)
    self.embedding_table = embedding_table
    self._initializer = tf_keras.initializers.get(initializer)
    self._with_lm = with_lm

  def build(self, input_shape):
    hidden_size = input_shape[-1]
    vocab_size, embedding_width = self.embedding_table.shape
    self.copy_dense = tf_keras.layers.Dense(
        1, kernel_initializer=tf_utils.clone_initializer(self._initializer), name='copy')
    self.projection = None
    if self._with_lm:
      if hidden_size != embedding_width:
        self.projection = tf_keras.layers.Dense(
            embedding_width, kernel_initializer=tf_utils.clone_initializer(self._initializer),
            name='projection')
      self.output_bias = self.add_weight(
          'output_bias', shape=[vocab_size], initializer='zeros', trainable=True)
    super().build(input_shape)

  def call(self, sequence_output, positions=None):
    """Computes the copy logits and, if the head has one, the LM logits.

    Args:
      sequence_output: [B, T, H] main Transformer output h.
      positions: [B, P] int positions for the LM logits; None means all T positions.

    Returns:
      Dict with `copy_logits` [B, T] float32 and, if the head has an LM output, `clm_logits`
      [B, P, V] float32 (P = T for all positions). Differentiable w.r.t. every input and
      weight, including the tied embedding table.
    """
    outputs = dict(copy_logits=tf.cast(self.copy_dense(sequence_output)[..., 0], tf.float32))
    if self._with_lm:
      hidden = sequence_output
      if positions is not None:
        hidden = tf.gather(sequence_output, positions, batch_dims=1)  # [B, P, H]
      if self.projection is not None:
        hidden = self.projection(hidden)  # [B, P, E]
      logits = tf.einsum('bpe,ve->bpv', hidden, tf.cast(self.embedding_table, hidden.dtype))
      outputs['clm_logits'] = tf.cast(logits, tf.float32) + tf.cast(self.output_bias, tf.float32)
    return outputs

  def get_config(self):
    raise NotImplementedError(
        'CorrectiveLmHead holds the shared embedding table and cannot be rebuilt from its '
        'config; rebuild the pretrainer with build_coco_lm_pretrainer instead.')
