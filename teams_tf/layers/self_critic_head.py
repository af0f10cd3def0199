"""SCRIPT's output layer: Model Garden's MLM head, also read as its own critic
(Nijkamp et al., §2)."""

import tensorflow as tf
import tf_keras

from teams_tf.layers import mlm_head
from teams_tf.ops import tied_log_odds


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class SelfCriticMaskedLM(mlm_head.MaskedLM):
  """`MaskedLM` (BERT's transform, tied output embeddings, output bias) with a critic mode.

  Called with `masked_positions` it is `mlm_head.MaskedLM` ([B, P, V] float32 logits, Eq. 2).
  Called without, it returns the self-critic log-odds of every token, logsumexp_v s_tv
  [B, T] float32 (Eq. 4-5, `tied_log_odds.tied_log_odds`), without materializing [B, T, V]
  scores. Same variables either way.
  """

  def call(self, sequence_data, masked_positions=None):
    if masked_positions is not None:
      return super().call(sequence_data, masked_positions)
    # Rows as the masked mode feeds them: its layers were built on [B·P, H].
    flat = tf.reshape(sequence_data, [-1, sequence_data.shape[-1]])  # [B·T, H]
    log_odds = tied_log_odds.tied_log_odds(self.layer_norm(self.dense(flat)),
                                           self.embedding_table, self.bias)
    return tf.reshape(log_odds, tf.shape(sequence_data)[:-1])
