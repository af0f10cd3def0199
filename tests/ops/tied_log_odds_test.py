"""SCRIPT's tied log-odds of "original" (Eq. 4-5) and their gradients against NumPy."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.losses import self_critic
from teams_tf.ops import tied_log_odds


def _numpy_scores(hidden, table, bias):
  return hidden.astype(np.float64) @ table.astype(np.float64).T + bias  # s_t = W e_t + b.


def _numpy_log_odds(scores):
  top = scores.max(-1, keepdims=True)
  return (top + np.log(np.exp(scores - top).sum(-1, keepdims=True)))[..., 0]


def _numpy_p_original(scores):
  total = np.exp(scores.astype(np.float64)).sum(-1)
  return total / (total + 1.0)  # Eq. (5).


def _random_head(rng, shape, vocab, width, dtype=np.float32):
  return (rng.normal(size=shape + (width,)).astype(dtype),
          rng.normal(size=(vocab, width)).astype(dtype),
          rng.normal(size=vocab).astype(np.float32))


class TiedLogOddsTest(tf.test.TestCase, parameterized.TestCase):

  def test_probability_of_original_matches_eq_4_and_5(self):
    hidden, table, bias = _random_head(np.random.default_rng(0), (2, 5), vocab=7, width=4)
    log_odds = tied_log_odds.tied_log_odds(hidden, table, bias).numpy()
    self.assertEqual((2, 5), log_odds.shape)
    scores = _numpy_scores(hidden, table, bias)
    self.assertAllClose(_numpy_p_original(scores), 1 / (1 + np.exp(-log_odds)), rtol=1e-5)
    # Eq. (4): the negative class is the complement.
    total = np.exp(scores).sum(-1)
    self.assertAllClose(1.0 / (total + 1.0), 1 / (1 + np.exp(log_odds)), rtol=1e-5)

  def test_gradients_match_numpy(self):
    rng = np.random.default_rng(1)
    hidden, table, bias = _random_head(rng, (3, 4), vocab=11, width=5)
    upstream = rng.normal(size=(3, 4))
    variables = [tf.Variable(x) for x in (hidden, table, bias)]
    with tf.GradientTape() as tape:
      objective = tf.reduce_sum(tied_log_odds.tied_log_odds(*variables) * upstream)
    got = tape.gradient(objective, variables)
    # d logsumexp_v s_tv / d s_tv = softmax_tv; s_tv = e_t · W_v + b_v.
    scores = _numpy_scores(hidden, table, bias)
    weighted = np.exp(scores - _numpy_log_odds(scores)[..., None]) * upstream[..., None]
    expected = [weighted @ table, np.einsum('btv,bte->ve', weighted, hidden),
                weighted.sum((0, 1))]
    for name, want, have in zip(('hidden', 'table', 'bias'), expected, got):
      self.assertAllClose(want, have, rtol=1e-4, atol=1e-6, msg=name)

  def test_bfloat16_bias_gradient_accumulates_over_many_tokens(self):
    # 4,096 tokens (B·T of SCRIPT-small): Σ_t softmax_tv summed in bfloat16 stagnates far
    # below the true value; it must come out within bfloat16 rounding of float64.
    rng = np.random.default_rng(2)
    hidden, table, bias = _random_head(rng, (4096,), vocab=64, width=8)
    hidden_bf16, table_bf16 = tf.cast(hidden, tf.bfloat16), tf.cast(table, tf.bfloat16)
    bias_variable = tf.Variable(bias)
    with tf.GradientTape() as tape:
      log_odds = tied_log_odds.tied_log_odds(hidden_bf16, table_bf16, bias_variable)
    got = tape.gradient(log_odds, bias_variable).numpy()
    scores = _numpy_scores(tf.cast(hidden_bf16, tf.float32).numpy(),
                           tf.cast(table_bf16, tf.float32).numpy(), bias)
    expected = np.exp(scores - _numpy_log_odds(scores)[..., None]).sum(0)
    self.assertEqual(tf.float32, log_odds.dtype)
    self.assertAllClose(expected, got, rtol=0.02)
    self.assertAllClose(_numpy_log_odds(scores), log_odds, atol=0.1)

  @parameterized.parameters(tf.bfloat16, tf.float16)
  def test_finite_for_large_scores_in_low_precision(self, dtype):
    # Σ exp(s) overflows float16/bfloat16 (and float32) here (s = 90); the log-odds do not.
    hidden = tf.ones([1, 2, 2], dtype)
    table = tf.fill([50, 2], tf.constant(45.0, dtype))
    log_odds = tied_log_odds.tied_log_odds(hidden, table, tf.zeros([50]))
    self.assertEqual(tf.float32, log_odds.dtype)
    loss = self_critic.self_critic_loss(log_odds, [[0.0, 1.0]], [[1.0, 1.0]])
    self.assertTrue(np.isfinite(float(loss)))
    self.assertAllClose((90 + np.log(50)) / 2, loss, rtol=1e-2)  # The replaced token's cost.


if __name__ == '__main__':
  tf.test.main()
