"""Tests of the multi-word selection head (TEAMS Eq. 7)."""

import numpy as np
import tensorflow as tf

from teams_tf.layers import mws_head
from tests import testing_utils


class MultiWordSelectionHeadTest(tf.test.TestCase):

  def _head_and_inputs(self):
    table = tf.Variable(tf.random.normal([20, 8], seed=1))
    head = mws_head.MultiWordSelectionHead(embedding_table=table, activation=None)
    sequence = tf.random.normal([2, 6, 12], seed=2)  # H = 12 != E = 8.
    positions = tf.constant([[1, 3], [0, 5]])
    candidates = tf.constant([[[4, 1, 2], [7, 8, 9]], [[0, 5, 6], [3, 10, 19]]])
    return table, head, sequence, positions, candidates

  def test_logits_are_dot_products_with_candidate_embeddings(self):
    table, head, sequence, positions, candidates = self._head_and_inputs()
    logits = head(sequence, positions, candidates)
    self.assertEqual((2, 2, 3), tuple(logits.shape))
    self.assertEqual(tf.float32, logits.dtype)
    # Independent computation: gather h at each position, transform, dot with e(x').
    query = head.layer_norm(head.dense(tf.gather(sequence, positions, batch_dims=1))).numpy()
    e = table.numpy()[candidates.numpy()]  # [B, P, K + 1, E]
    self.assertAllClose(np.einsum('bpe,bpce->bpc', query, e), logits, rtol=1e-5, atol=1e-5)

  def test_candidate_order_only_permutes_logits(self):
    _, head, sequence, positions, candidates = self._head_and_inputs()
    logits = head(sequence, positions, candidates)
    reversed_logits = head(sequence, positions, candidates[..., ::-1])
    self.assertAllClose(logits[..., ::-1], reversed_logits)

  def test_gradients_reach_sequence_transform_and_embeddings(self):
    table, head, sequence, positions, candidates = self._head_and_inputs()
    sequence = tf.Variable(sequence)
    with tf.GradientTape() as tape:
      loss = tf.reduce_sum(head(sequence, positions, candidates) ** 2)
    grads = tape.gradient(loss, [sequence, table] + head.trainable_variables)
    for grad in grads:
      self.assertGreater(float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(grad)))), 0.0)
    # Only candidate rows of the table get gradient.
    used = set(candidates.numpy().reshape(-1).tolist())
    row_norms = tf.norm(tf.convert_to_tensor(grads[1]), axis=-1).numpy()
    self.assertEqual(used, set(np.nonzero(row_norms)[0].tolist()))

  def test_mixed_bfloat16(self):
    with testing_utils.keras_policy('mixed_bfloat16'):
      table = tf.Variable(tf.random.normal([20, 8]))
      head = mws_head.MultiWordSelectionHead(embedding_table=table)
      logits = head(tf.cast(tf.random.normal([2, 6, 12]), tf.bfloat16),
                    tf.constant([[1, 2], [3, 4]]), tf.ones([2, 2, 3], tf.int32))
      self.assertEqual(tf.float32, logits.dtype)


if __name__ == '__main__':
  tf.test.main()
