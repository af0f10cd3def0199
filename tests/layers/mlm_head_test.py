"""The MLM head: Model Garden's MaskedLM values, with a float32 bias gradient under bfloat16."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers

from teams_tf.layers import mlm_head
from tests import testing_utils


def _heads(vocab, width):
  """Ours and Model Garden's head on one embedding table made as the encoders make theirs."""
  embedding = layers.OnDeviceEmbedding(
      vocab, width, initializer=tf_keras.initializers.RandomNormal(seed=0))
  embedding.build(None)
  return [cls(embedding_table=embedding.embeddings, activation='gelu', name='cls/predictions')
          for cls in (mlm_head.MaskedLM, layers.MaskedLM)]


class MaskedLmTest(tf.test.TestCase):

  def test_same_logits_and_variables_as_model_garden(self):
    ours, theirs = _heads(vocab=13, width=6)
    sequence = tf.constant(np.random.default_rng(1).normal(size=(2, 7, 6)), tf.float32)
    positions = tf.constant([[1, 4, 6], [0, 2, 2]])
    got = ours(sequence, positions)
    theirs(sequence, positions)
    for mine, reference in zip(ours.weights, theirs.weights):
      reference.assign(mine)
      self.assertEqual(reference.name, mine.name)
    bias = np.random.default_rng(2).normal(size=13).astype(np.float32)
    ours.bias.assign(bias)
    theirs.bias.assign(bias)
    got = ours(sequence, positions)
    self.assertEqual([2, 3, 13], got.shape.as_list())
    self.assertEqual(tf.float32, got.dtype)
    self.assertAllClose(theirs(sequence, positions), got, rtol=1e-5, atol=1e-5)

  def test_bias_gradient_sums_in_float32_under_mixed_bfloat16(self):
    # 4,096 masked rows of a 64-word vocabulary: each softmax term is ~1/64, the running sum
    # reaches ~64, past where bfloat16 (8 significant bits) still adds such terms.
    with testing_utils.keras_policy('mixed_bfloat16'):
      ours, theirs = _heads(vocab=64, width=8)
      rng = np.random.default_rng(3)
      sequence = tf.constant(rng.normal(size=(64, 64, 8)), tf.float32)
      positions = tf.constant(np.tile(np.arange(64), (64, 1)), tf.int32)
      labels = rng.integers(0, 64, size=(64, 64))
      gradients = []
      for head in (ours, theirs):
        head(sequence, positions)
        with tf.GradientTape() as tape:
          logits = tf.cast(head(sequence, positions), tf.float32)
          loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        gradients.append(tape.gradient(loss, head.bias).numpy())
        # Reference: the same float32 logits minus the bias, summed in float64.
        softmax = tf.nn.softmax(logits).numpy().astype(np.float64).reshape(-1, 64)
        expected = softmax.sum(0) - np.bincount(labels.ravel(), minlength=64)
        gradients.append(expected)
    ours_got, ours_expected, theirs_got, theirs_expected = gradients
    self.assertAllClose(ours_expected, ours_got, rtol=0.01, atol=0.05)
    # Model Garden's bfloat16 BiasAddGrad misses it by far more (why this layer exists).
    self.assertGreater(np.abs(theirs_got - theirs_expected).max(), 1.0)


if __name__ == '__main__':
  tf.test.main()
