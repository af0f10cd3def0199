"""TACO pretrainer: g = h - e, the token pairs it gathers, ablations, gradients, no extra
weights."""

import os
import subprocess
import sys
import textwrap

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.losses import contrastive
from teams_tf.models import taco_pretrainer
from tests import testing_utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

def _find(vectors, target):
  """(b, t) of the row of `vectors` [B, T, H] equal to `target` [H]."""
  matches = np.argwhere(np.all(np.isclose(vectors, target, atol=1e-6), axis=-1))
  return tuple(matches[0])


class TacoPretrainerTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(
      ('bert_v2', dict()),
      ('scaffold', dict(relative_position_bias=True)))
  def test_global_semantics_are_h_minus_the_embedding_output(self, overrides):
    model = taco_pretrainer.build_taco_pretrainer(
        testing_utils.tiny_taco_config(**overrides), seed=1)
    batch = testing_utils.pretraining_batch()
    out = model(batch)
    ids = batch['input_word_ids'].numpy()
    def weight(name):
      return next(w.numpy() for w in model.encoder_network.weights if name in w.name)

    word = weight('word_embeddings/embeddings')[ids]  # [B, T, E = 16]
    summed = (word + weight('position_embedding/embeddings')[:ids.shape[1]]
              + weight('type_embeddings/embeddings')[batch['input_type_ids'].numpy()])
    normed = (summed - summed.mean(-1, keepdims=True)) / np.sqrt(
        summed.var(-1, keepdims=True) + 1e-12) * weight('embeddings/layer_norm/gamma') + weight(
            'embeddings/layer_norm/beta')
    kernel = weight('embedding_projection/kernel')
    bias = weight('embedding_projection/bias')
    static = normed @ kernel + bias  # Brought to H = 32.
    self.assertAllClose(out['sequence_output'].numpy() - static, out['global_semantics'],
                        atol=1e-5)

  def test_pairs_are_window_positives_and_other_sequence_negatives(self):
    model = taco_pretrainer.build_taco_pretrainer(testing_utils.tiny_taco_config(), seed=2)
    batch = testing_utils.pretraining_batch()
    out = {k: v.numpy() for k, v in model(batch).items()}
    g = out['global_semantics']
    mask = batch['input_mask'].numpy()
    self.assertAllEqual(mask.astype(np.float32), out['tc_weights'])
    for b, t in zip(*np.nonzero(mask)):
      pb, pt = _find(g, out['tc_positives'][b, t])
      self.assertEqual(b, pb)
      self.assertBetween(abs(pt - t), 1, 2)  # Window 2, never the token itself.
      self.assertEqual(1, mask[pb, pt])
      for k in range(4):
        nb, nt = _find(g, out['tc_negatives'][b, t, k])
        self.assertNotEqual(b, nb)
        self.assertEqual(1, mask[nb, nt])

  def test_negatives_come_from_the_global_batch_across_replicas(self):
    # Two logical CPUs need a fresh process (devices are fixed once TensorFlow starts). Each
    # replica gets 2 of the 4 sequences; its negatives must span the other replica's too.
    script = textwrap.dedent('''
        import numpy as np, tensorflow as tf
        cpu = tf.config.list_physical_devices('CPU')[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from teams_tf.models import taco_pretrainer
        from tests import testing_utils
        strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
        batch = testing_utils.pretraining_batch(batch_size=4)
        with strategy.scope():
          model = taco_pretrainer.build_taco_pretrainer(
              testing_utils.tiny_taco_config(num_negatives=50), seed=3)
        inputs = strategy.experimental_distribute_values_from_function(
            lambda c: {k: v[2 * c.replica_id_in_sync_group:][:2] for k, v in batch.items()})
        out = strategy.run(tf.function(lambda x: model(x)), args=(inputs,))
        local = lambda key: np.concatenate(
            [v.numpy() for v in strategy.experimental_local_results(out[key])])
        np.savez(OUTPUT, semantics=local('global_semantics'), negatives=local('tc_negatives'))
        ''')
    output = os.path.join(self.get_temp_dir(), 'mirrored.npz')
    result = subprocess.run([sys.executable, '-c', f'OUTPUT = {output!r}\n' + script],
                            cwd=_ROOT, capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(0, result.returncode, result.stderr[-3000:])
    result = np.load(output)
    g = result['semantics']
    for b in range(4):
      rows = {_find(g, negative)[0] for negative in result['negatives'][b, 0]}
      self.assertNotIn(b, rows)
      # 50 draws over the 3 other sequences: all of them, both replicas' included.
      self.assertEqual(set(range(4)) - {b}, rows)

  @parameterized.named_parameters(('concentrated_taco', dict(tc_positions='masked')),
                                  ('mlm_tp', dict(mlm_positions='all')))
  def test_ablations(self, overrides):
    model = taco_pretrainer.build_taco_pretrainer(
        testing_utils.tiny_taco_config(**overrides), seed=3)
    batch = testing_utils.pretraining_batch()
    out = {k: v.numpy() for k, v in model(batch).items()}
    positions = batch['masked_lm_positions'].numpy()
    weights = batch['masked_lm_weights'].numpy()
    if 'tc_positions' in overrides:
      expected = np.zeros_like(out['tc_weights'])
      for b, p in zip(*np.nonzero(weights)):
        expected[b, positions[b, p]] = 1.0
      self.assertAllEqual(expected, out['tc_weights'])
    else:
      original = batch['input_word_ids'].numpy().copy()
      for b, p in zip(*np.nonzero(weights)):
        original[b, positions[b, p]] = batch['masked_lm_ids'].numpy()[b, p]
      self.assertAllEqual(original, out['mlm_target_ids'])
      self.assertAllEqual(batch['input_mask'].numpy().astype(np.float32), out['mlm_weights'])
      self.assertEqual(original.shape + (testing_utils.VOCAB_SIZE,), out['mlm_logits'].shape)

  @parameterized.named_parameters(('anchors_only', True), ('all_pairs', False))
  def test_tc_loss_trains_the_encoder_and_the_embeddings(self, stop_key_gradients):
    model = taco_pretrainer.build_taco_pretrainer(
        testing_utils.tiny_taco_config(tc_stop_key_gradients=stop_key_gradients), seed=4)
    batch = testing_utils.pretraining_batch()
    with tf.GradientTape(persistent=True) as tape:
      out = model(batch, training=True)
      hidden = out['global_semantics'].shape[-1]
      loss = contrastive.token_alignment_contrastive_loss(
          tf.reshape(out['global_semantics'], [-1, hidden]),
          tf.reshape(out['tc_positives'], [-1, hidden]),
          tf.reshape(out['tc_negatives'], [-1, 4, hidden]), tf.reshape(out['tc_weights'], [-1]))
      keys_only = tf.reduce_sum(out['tc_positives']) + tf.reduce_sum(out['tc_negatives'])
    watched = [model.encoder_network.get_embedding_table(),
               model.encoder_network.trainable_variables[-1]]
    for gradient in tape.gradient(loss, watched):
      self.assertGreater(float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(gradient)))), 0)
    key_gradients = [g for g in tape.gradient(keys_only, watched) if g is not None]
    self.assertEqual(not stop_key_gradients, bool(key_gradients))

  def test_no_parameters_beyond_bert(self):
    config = testing_utils.tiny_taco_config()
    model = taco_pretrainer.build_taco_pretrainer(config, seed=5)
    batch = testing_utils.pretraining_batch()
    model(batch)
    self.assertEqual(testing_utils.bert_parameter_count(config.encoder),
                     testing_utils.parameter_count(model))

  @parameterized.named_parameters(
      ('window', dict(window_size=0), 'window_size=0 must be >= 1'),
      ('negatives', dict(num_negatives=0), 'num_negatives=0 must be >= 1'),
      ('temperature', dict(temperature=0.0), 'temperature=0.0 must be > 0'),
      ('positions', dict(tc_positions='some'), "tc_positions='some' must be one of"))
  def test_invalid_config_names_the_field(self, overrides, message):
    with self.assertRaisesRegex(ValueError, message):
      taco_pretrainer.build_taco_pretrainer(testing_utils.tiny_taco_config(**overrides))


if __name__ == '__main__':
  tf.test.main()
