"""COCO-LM corrective LM loss (Eq. 2) against an independent NumPy computation."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.losses import clm


def _numpy_lm_loss(lm_logits, copy_logits, original, inputs, weights, copy_mechanism):
  shifted = lm_logits - lm_logits.max(-1, keepdims=True)
  softmax = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
  p_vocab = np.take_along_axis(softmax, original[..., None], -1)[..., 0]
  if copy_mechanism:
    p_copy = 1.0 / (1.0 + np.exp(-copy_logits))
    p_lm = (original == inputs) * p_copy + (1.0 - p_copy) * p_vocab
  else:
    p_lm = p_vocab
  return np.sum(-np.log(p_lm) * weights) / np.sum(weights)


def _inputs(seed=0):
  rng = np.random.default_rng(seed)
  lm_logits = rng.normal(size=(2, 4, 9)).astype(np.float32) * 2
  copy_logits = rng.normal(size=(2, 4)).astype(np.float32) * 2
  original = rng.integers(0, 9, size=(2, 4)).astype(np.int32)
  inputs = np.where(rng.random((2, 4)) < 0.5, original, (original + 1) % 9).astype(np.int32)
  weights = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.float32)
  return lm_logits, copy_logits, original, inputs, weights


class CorrectiveLmLossTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(('with_copy', True), ('without_copy', False))
  def test_matches_numpy(self, copy_mechanism):
    args = _inputs()
    expected = _numpy_lm_loss(*args, copy_mechanism=copy_mechanism)
    got = clm.corrective_lm_loss(*args, copy_mechanism=copy_mechanism)
    self.assertAllClose(expected, got, rtol=1e-5)

  @parameterized.named_parameters(('stop_gradient', True, False), ('no_stop_gradient', False, True))
  def test_gradient_reaches_copy_logit_only_without_stop_gradient(self, stop, reaches):
    lm_logits, copy_logits, original, inputs, weights = _inputs(1)
    copy_logits = tf.Variable(copy_logits)
    lm_logits = tf.Variable(lm_logits)
    with tf.GradientTape(persistent=True) as tape:
      loss = clm.corrective_lm_loss(lm_logits, copy_logits, original, inputs, weights,
                                    stop_gradient=stop)
    copy_gradient = tape.gradient(loss, copy_logits)
    self.assertEqual(reaches, copy_gradient is not None and
                     float(tf.reduce_max(tf.abs(copy_gradient))) > 0)
    self.assertGreater(float(tf.reduce_max(tf.abs(tape.gradient(loss, lm_logits)))), 0)

  @parameterized.parameters(tf.bfloat16, tf.float16)
  def test_finite_when_the_copy_probability_saturates_in_low_precision(self, dtype):
    lm_logits, _, original, inputs, weights = _inputs(2)
    # p_copy(1) = sigmoid(60) rounds to 1 and p_copy(0) to 0 in probability space.
    copy_logits = np.full((2, 4), 60.0, np.float32)
    loss = clm.corrective_lm_loss(tf.cast(lm_logits, dtype), tf.cast(copy_logits, dtype),
                                  original, inputs, weights)
    self.assertTrue(np.isfinite(float(loss)))
    self.assertEqual(tf.float32, loss.dtype)
    # Replaced tokens then cost about 60 nats (log p_copy(0) ≈ -60), not infinity.
    self.assertGreater(float(loss), 1.0)

  def test_full_distribution_matches_numpy_and_sums_to_one(self):
    lm_logits, copy_logits, _, inputs, _ = _inputs(3)
    got = clm.corrective_lm_log_probs(lm_logits, copy_logits, inputs).numpy()
    shifted = lm_logits - lm_logits.max(-1, keepdims=True)
    softmax = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    p_copy = 1.0 / (1.0 + np.exp(-copy_logits))
    expected = (1.0 - p_copy)[..., None] * softmax
    for b, p in np.ndindex(*inputs.shape):
      expected[b, p, inputs[b, p]] += p_copy[b, p]
    self.assertAllClose(np.log(expected), got, atol=1e-5)
    self.assertAllClose(np.ones(inputs.shape), np.exp(got).sum(-1), atol=1e-5)

  def test_input_token_probability_matches_numpy(self):
    lm_logits, copy_logits, _, inputs, _ = _inputs(4)
    shifted = lm_logits - lm_logits.max(-1, keepdims=True)
    softmax = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    p_copy = 1.0 / (1.0 + np.exp(-copy_logits))
    b, p = np.indices(inputs.shape)
    expected = p_copy + (1.0 - p_copy) * softmax[b, p, inputs]
    self.assertAllClose(np.log(expected),
                        clm.input_token_log_prob(lm_logits, copy_logits, inputs), atol=1e-5)

  def test_all_weights_zero_gives_zero(self):
    lm_logits, copy_logits, original, inputs, _ = _inputs()
    self.assertEqual(0.0, float(clm.corrective_lm_loss(
        lm_logits, copy_logits, original, inputs, np.zeros((2, 4), np.float32))))


if __name__ == '__main__':
  tf.test.main()
