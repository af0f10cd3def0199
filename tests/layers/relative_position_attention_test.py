"""T5 relative position bias attention against NumPy, and one shared table per encoder."""

import math

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.modeling import layers

from teams_tf.layers import relative_position_attention
from teams_tf.networks import shared_encoders
from tests import testing_utils


def _t5_bucket(relative_position, num_buckets, max_distance):
  """T5's bidirectional bucket of memory_position - query_position (Raffel et al., 2020)."""
  half = num_buckets // 2
  bucket = half if relative_position > 0 else 0
  distance = abs(relative_position)
  exact = half // 2
  if distance < exact:
    return bucket + distance
  log_bucket = exact + int(math.log(distance / exact) / math.log(max_distance / exact) *
                           (half - exact))
  return bucket + min(log_bucket, half - 1)


def _numpy_attention(layer, x, mask, table, num_buckets, max_distance):
  query_kernel, query_bias, key_kernel, key_bias, value_kernel, value_bias, out_kernel, \
      out_bias = [w.numpy() for w in layer.weights if 'rel_embedding' not in w.name]
  q = np.einsum('bth,hnd->btnd', x, query_kernel) + query_bias
  k = np.einsum('bth,hnd->btnd', x, key_kernel) + key_bias
  v = np.einsum('bth,hnd->btnd', x, value_kernel) + value_bias
  t = x.shape[1]
  buckets = np.array([[_t5_bucket(j - i, num_buckets, max_distance) for j in range(t)]
                      for i in range(t)])
  scores = np.einsum('btnd,bsnd->bnts', q, k) / np.sqrt(q.shape[-1])
  scores = scores + np.transpose(table[buckets], [2, 0, 1])[None]
  scores = np.where(mask[:, None], scores, -1e9)
  probabilities = np.exp(scores - scores.max(-1, keepdims=True))
  probabilities /= probabilities.sum(-1, keepdims=True)
  context = np.einsum('bnts,bsnd->btnd', probabilities, v)
  return np.einsum('btnd,ndh->bth', context, out_kernel) + out_bias


def _numpy_layer_norm(x, layer_norm):
  gamma, beta = [w.numpy() for w in layer_norm.weights]
  mean, variance = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  return (x - mean) / np.sqrt(variance + layer_norm.epsilon) * gamma + beta


def _pre_ln_layer(num_buckets=8, max_distance=12, hidden=6, heads=2):
  """A pre-LN relative-position layer (ReLU feed-forward, no dropout) and its bias."""
  bias = layers.RelativePositionBias(num_heads=heads, relative_attention_num_buckets=num_buckets,
                                     relative_attention_max_distance=max_distance)
  attention = relative_position_attention.RelativePositionAttention(
      position_bias=bias, num_heads=heads, key_dim=hidden // heads)
  layer = relative_position_attention.RelativePositionTransformerLayer(
      num_attention_heads=heads, inner_dim=8, inner_activation='relu', attention_cls=attention,
      norm_first=True)
  return layer, bias


def _built_encoder_pair(num_shared_layers):
  """A tiny generator and discriminator with relative positions, called once (built)."""
  generator, discriminator = shared_encoders.build_generator_and_discriminator(
      testing_utils.tiny_encoder_config(), num_generator_layers=2,
      num_shared_layers=num_shared_layers, relative_position_num_buckets=8,
      relative_position_max_distance=16)
  batch = testing_utils.pretraining_batch()
  inputs = [batch['input_word_ids'], batch['input_mask'], batch['input_type_ids']]
  generator(inputs)
  discriminator(inputs)
  return generator, discriminator

class RelativePositionAttentionTest(tf.test.TestCase):

  def test_matches_numpy_attention_with_t5_bias(self):
    num_buckets, max_distance = 8, 12
    bias = layers.RelativePositionBias(num_heads=2, relative_attention_num_buckets=num_buckets,
                                       relative_attention_max_distance=max_distance)
    layer = relative_position_attention.RelativePositionAttention(
        position_bias=bias, num_heads=2, key_dim=4)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 20, 6)).astype(np.float32)  # Distances up to 19 > max_distance.
    mask = np.ones((2, 20, 20), bool)
    mask[1, :, 15:] = False  # Padding in the second row.
    layer(x, x, attention_mask=mask)
    table = rng.normal(size=(num_buckets, 2)).astype(np.float32)
    bias.set_weights([table])
    expected = _numpy_attention(layer, x, mask, table, num_buckets, max_distance)
    self.assertAllClose(expected, layer(x, x, attention_mask=mask), atol=1e-5)

  def test_one_bias_table_per_encoder_shared_by_its_layers(self):
    generator, discriminator = _built_encoder_pair(num_shared_layers=0)
    tables = [{id(layer._attention_layer.position_bias)  # pylint: disable=protected-access
               for layer in encoder.hidden_layers} for encoder in (generator, discriminator)]
    self.assertLen(tables[0], 1)
    self.assertLen(tables[1], 1)
    self.assertNotEqual(tables[0], tables[1])
    names = [v.name for v in discriminator.trainable_variables if 'rel_embedding' in v.name]
    self.assertEqual(['relative_position_bias/rel_embedding:0'], names)

  def test_shared_layers_share_one_bias_table(self):
    generator, discriminator = _built_encoder_pair(num_shared_layers=1)
    tables = {id(layer._attention_layer.position_bias)  # pylint: disable=protected-access
              for encoder in (generator, discriminator) for layer in encoder.hidden_layers}
    self.assertLen(tables, 1)

  def test_scaled_bias_is_scale_times_table_and_starts_alike(self):
    config = testing_utils.tiny_encoder_config()
    x = tf.zeros([1, 20, 2])
    plain = shared_encoders.build_position_bias(config, 8, 12, 'plain')
    scaled = shared_encoders.build_position_bias(config, 8, 12, 'scaled', scale=10.0)
    plain(x, x)
    scaled(x, x)
    # The same bias at initialization, in distribution: a tenth of the stored spread.
    ratio = np.std(scaled.get_weights()[0]) / np.std(plain.get_weights()[0])
    self.assertBetween(ratio, 0.05, 0.2)
    table = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    plain.set_weights([table * 10.0])
    scaled.set_weights([table])
    self.assertAllClose(plain(x, x), scaled(x, x), atol=1e-5)
    self.assertEqual(10.0, type(scaled).from_config(scaled.get_config()).scale)
    with self.assertRaisesRegex(ValueError, 'relative_position_bias_scale=0 must be > 0'):
      shared_encoders.validate_relative_positions(8, 12, scale=0)

  def test_scaled_bias_learns_faster_under_adam(self):
    # One Adam step moves each stored value by about the learning rate, so the bias itself
    # moves `scale` times as far.
    config = testing_utils.tiny_encoder_config()
    x = tf.zeros([1, 6, 2])
    moved = []
    for scale in (1.0, 10.0):
      bias = shared_encoders.build_position_bias(config, 8, 12, f'bias_{scale}', scale=scale)
      before = bias(x, x)
      optimizer = tf_keras.optimizers.Adam(1e-3)
      with tf.GradientTape() as tape:
        loss = tf.reduce_sum(bias(x, x))
      optimizer.apply_gradients(zip(tape.gradient(loss, bias.trainable_variables),
                                    bias.trainable_variables))
      moved.append(float(tf.reduce_max(tf.abs(bias(x, x) - before))))
    self.assertAllClose([1e-3, 1e-2], moved, rtol=1e-3)

  def test_pre_ln_layer_matches_numpy_with_normalised_keys_and_values(self):
    # Pre-LN (Xiong et al., 2020): y = x + Attn(LN1(x)) with queries, keys and values all from
    # LN1(x), as in Model Garden's TransformerEncoderBlock; out = y + FFN(LN2(y)).
    layer, bias = _pre_ln_layer()
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 20, 6)).astype(np.float32)
    mask = np.ones((2, 20, 20), bool)
    mask[1, :, 15:] = False
    layer([x, mask])
    table = rng.normal(size=(8, 2)).astype(np.float32)
    bias.set_weights([table])
    for weight in layer.weights:  # Non-trivial LayerNorm parameters.
      if 'layer_norm' in weight.name:
        weight.assign(rng.normal(size=weight.shape).astype(np.float32))
    normalized = _numpy_layer_norm(x, layer._attention_layer_norm)
    y = x + _numpy_attention(layer._attention_layer, normalized, mask, table, 8, 12)
    kernel_in, bias_in = [w.numpy() for w in layer._intermediate_dense.weights]
    kernel_out, bias_out = [w.numpy() for w in layer._output_dense.weights]
    hidden = np.maximum(
        np.einsum('bth,hi->bti', _numpy_layer_norm(y, layer._output_layer_norm), kernel_in)
        + bias_in, 0.0)
    expected = y + np.einsum('bti,ih->bth', hidden, kernel_out) + bias_out
    self.assertAllClose(expected, layer([x, mask]), atol=1e-5)

  def test_pre_ln_layer_trains_in_mixed_bfloat16(self):
    # Model Garden's TransformerScaffold adds a float32 and a bfloat16 tensor here.
    with testing_utils.keras_policy('mixed_bfloat16'):
      layer, _ = _pre_ln_layer()
      x = tf.random.normal((2, 10, 6), dtype=tf.bfloat16)
      mask = tf.ones((2, 10, 10))
      with tf.GradientTape() as tape:
        output = layer([x, mask])
        loss = tf.reduce_sum(tf.cast(output, tf.float32) ** 2)
      gradients = tape.gradient(loss, layer.trainable_variables)
    self.assertEqual(tf.bfloat16, output.dtype)
    self.assertTrue(all(
        g is not None and np.all(np.isfinite(tf.cast(tf.convert_to_tensor(g), tf.float32)))
        for g in gradients))


if __name__ == '__main__':
  tf.test.main()
