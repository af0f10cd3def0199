"""COCO-LM CLM head: copy logits and tied-embedding LM logits against NumPy."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.layers import clm_head


class CorrectiveLmHeadTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(('factorised_embeddings', 6), ('hidden_width_embeddings', 8))
  def test_matches_numpy(self, embedding_width):
    rng = np.random.default_rng(0)
    table = tf.Variable(rng.normal(size=(11, embedding_width)).astype(np.float32))
    head = clm_head.CorrectiveLmHead(table)
    hidden = rng.normal(size=(2, 5, 8)).astype(np.float32)
    positions = np.array([[1, 3], [0, 4]], np.int32)
    out = head(hidden, positions)
    head.output_bias.assign(rng.normal(size=11).astype(np.float32))
    out = {k: v.numpy() for k, v in head(hidden, positions).items()}
    copy_kernel, copy_bias = head.copy_dense.get_weights()
    self.assertAllClose(hidden @ copy_kernel[:, 0] + copy_bias[0], out['copy_logits'], atol=1e-5)
    gathered = np.take_along_axis(hidden, positions[..., None], 1)  # [B, P, H]
    if head.projection is not None:
      kernel, bias = head.projection.get_weights()
      gathered = gathered @ kernel + bias
    else:
      self.assertEqual(8, embedding_width)
    expected = gathered @ table.numpy().T + head.output_bias.numpy()
    self.assertAllClose(expected, out['clm_logits'], atol=1e-5)
    self.assertEqual((2, 5), out['copy_logits'].shape)
    self.assertEqual((2, 2, 11), out['clm_logits'].shape)

  def test_all_positions_and_copy_only(self):
    table = tf.Variable(tf.random.normal([11, 8]))
    hidden = tf.random.normal([2, 5, 8])
    self.assertEqual((2, 5, 11), clm_head.CorrectiveLmHead(table)(hidden)['clm_logits'].shape)
    copy_only = clm_head.CorrectiveLmHead(table, with_lm=False)
    self.assertEqual({'copy_logits'}, set(copy_only(hidden)))
    own = [v for v in copy_only.trainable_variables if v is not table]
    self.assertEqual(['copy/kernel:0', 'copy/bias:0'], [v.name.split('/', 1)[1] for v in own])

  def test_float32_outputs_under_mixed_bfloat16(self):
    table = tf.Variable(tf.random.normal([11, 8]))
    head = clm_head.CorrectiveLmHead(table, dtype='mixed_bfloat16')
    out = head(tf.cast(tf.random.normal([2, 5, 8]), tf.bfloat16), tf.constant([[0], [1]]))
    self.assertEqual(tf.float32, out['copy_logits'].dtype)
    self.assertEqual(tf.float32, out['clm_logits'].dtype)


if __name__ == '__main__':
  tf.test.main()
