"""Token pooling against NumPy: padding never counts, each segment pools its own tokens."""

import numpy as np
import tensorflow as tf

from teams_tf.layers import token_pooling


def _inputs(seed=0):
  rng = np.random.default_rng(seed)
  sequence = rng.normal(size=(3, 7, 5)).astype(np.float32)
  # Lengths 7, 4 and 2; the second segment starts at 3, 2 and never.
  mask = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5], np.int32)
  types = np.array([[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1], [0] * 7], np.int32)
  return sequence, mask, types


def _mean(vectors):
  return vectors.mean(axis=0) if len(vectors) else np.zeros(vectors.shape[-1], np.float32)


class TokenPoolingTest(tf.test.TestCase):

  def test_mean_is_over_real_tokens_only(self):
    sequence, mask, types = _inputs()
    expected = [_mean(sequence[b][mask[b] == 1]) for b in range(3)]
    self.assertAllClose(expected, token_pooling.TokenPooling('mean')(sequence, mask, types),
                        rtol=1e-6)

  def test_segment_pair_is_sentence_bert_features_of_the_two_segment_means(self):
    sequence, mask, types = _inputs(1)
    expected = []
    for b in range(3):
      u = _mean(sequence[b][(mask[b] == 1) & (types[b] == 0)])
      v = _mean(sequence[b][(mask[b] == 1) & (types[b] == 1)])  # Padding has type 1 in row 1.
      expected.append(np.concatenate([u, v, np.abs(u - v), u * v]))
    pooled = token_pooling.TokenPooling('segment_pair')(sequence, mask, types)
    self.assertEqual([3, 20], pooled.shape.as_list())
    self.assertAllClose(expected, pooled, rtol=1e-5, atol=1e-6)

  def test_siamese_cosine_is_the_cosine_of_each_segments_mean_in_its_own_pass(self):
    sequence, mask, types = _inputs(2)
    second_sequence = _inputs(3)[0]
    expected = []
    for b in range(2):  # Row 2 has no second segment.
      u = _mean(sequence[b][(mask[b] == 1) & (types[b] == 0)])
      v = _mean(second_sequence[b][(mask[b] == 1) & (types[b] == 1)])
      expected.append([u @ v / np.linalg.norm(u) / np.linalg.norm(v)])
    pooled = token_pooling.TokenPooling('siamese_cosine')(sequence, mask, types, second_sequence)
    self.assertEqual([3, 1], pooled.shape.as_list())
    self.assertAllClose(expected, pooled[:2], rtol=1e-5, atol=1e-6)
    self.assertAllEqual([0.0], pooled[2])  # An empty segment is a zero vector, not a NaN.

  def test_segment_masks_keep_each_segments_real_tokens(self):
    _, mask, types = _inputs()
    first, second = token_pooling.segment_masks(tf.constant(mask), tf.constant(types))
    self.assertAllEqual(mask * (types == 0), first)
    self.assertAllEqual(mask * (types == 1), second)

  def test_a_rebuilt_layer_pools_the_same_way(self):
    # Keras rebuilds a saved model's layers from get_config: the pooling must survive it.
    sequence, mask, types = _inputs(4)
    layer = token_pooling.TokenPooling('segment_pair', name='pool')
    rebuilt = token_pooling.TokenPooling.from_config(layer.get_config())
    self.assertEqual('pool', rebuilt.name)
    self.assertAllClose(layer(sequence, mask, types), rebuilt(sequence, mask, types))

  def test_unknown_pooling_names_the_choices(self):
    with self.assertRaisesRegex(ValueError,
                                "pooling='max'; use one of mean, segment_pair, siamese_cosine"):
      token_pooling.TokenPooling('max')


if __name__ == '__main__':
  tf.test.main()
