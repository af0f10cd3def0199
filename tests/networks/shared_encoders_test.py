"""Tests of generator/discriminator construction with shared embeddings and layers."""

from absl.testing import parameterized
import tensorflow as tf
import tf_keras

from official.nlp.configs import encoders

from teams_tf.networks import encoder_embeddings
from teams_tf.networks import shared_encoders
from tests import testing_utils


def _variable_ids(layer):
  return {id(v) for v in layer.trainable_variables}


class SharedEncodersTest(tf.test.TestCase, parameterized.TestCase):

  def test_rank3_projection_computes_model_gardens_with_the_same_variables(self):
    config = encoders.EncoderConfig(type='bert_v2', bert_v2=testing_utils.tiny_encoder_config())
    plain = encoders.build_encoder(config)
    fast = encoder_embeddings.use_rank3_embedding_projection(encoders.build_encoder(config))
    self.assertEqual('btx,xy->bty', fast._embedding_projection.equation)  # pylint: disable=protected-access
    batch = testing_utils.pretraining_batch(seq_length=8)
    inputs = {key: batch[key][:, :8] for key in ('input_word_ids', 'input_mask', 'input_type_ids')}
    plain(inputs)
    fast(inputs)
    # The same variables (in another order) under each encoder's own name scope.
    plain_variables = {v.name.split('/', 1)[1]: v for v in plain.variables}
    fast_variables = {v.name.split('/', 1)[1]: v for v in fast.variables}
    self.assertEqual(sorted(plain_variables), sorted(fast_variables))
    for name, variable in fast_variables.items():
      variable.assign(plain_variables[name])
    self.assertAllClose(plain(inputs)['sequence_output'], fast(inputs)['sequence_output'],
                        atol=1e-6, rtol=1e-6)

  def test_an_unexpected_model_garden_projection_is_a_one_line_error(self):
    encoder = encoders.build_encoder(
        encoders.EncoderConfig(type='bert_v2', bert_v2=testing_utils.tiny_encoder_config()))
    encoder._embedding_projection = tf_keras.layers.Dense(32)  # pylint: disable=protected-access
    with self.assertRaisesRegex(RuntimeError, r'^tf-models-official \S+: BertEncoderV2\'s '
                                r'embedding projection is a Dense'):
      encoder_embeddings.use_rank3_embedding_projection(encoder)

  @parameterized.named_parameters(
      ('no_tie', 2, 0), ('half', 2, 1), ('full_tie', 2, 2), ('shallow_generator', 1, 1))
  def test_bottom_layers_are_the_same_variables(self, generator_layers, shared):
    config = testing_utils.tiny_encoder_config(num_layers=3)
    generator, discriminator = shared_encoders.build_generator_and_discriminator(
        config, num_generator_layers=generator_layers, num_shared_layers=shared)
    batch = testing_utils.pretraining_batch(seq_length=8)
    inputs = [batch['input_word_ids'][:, :8], batch['input_mask'][:, :8],
              batch['input_type_ids'][:, :8]]
    generator(inputs)
    discriminator(inputs)
    self.assertLen(generator.hidden_layers, generator_layers)
    self.assertLen(discriminator.hidden_layers, 3)
    for i in range(generator_layers):
      gen_vars = _variable_ids(generator.hidden_layers[i])
      disc_vars = _variable_ids(discriminator.hidden_layers[i])
      if i < shared:
        self.assertIs(generator.hidden_layers[i], discriminator.hidden_layers[i])
        self.assertEqual(gen_vars, disc_vars)
      else:
        self.assertEmpty(gen_vars & disc_vars)
    # Tied embeddings (ELECTRA): the very same table.
    self.assertIs(generator.get_embedding_table(), discriminator.get_embedding_table())
    shared = generator.embedding_network.get_layer('embeddings')
    self.assertIs(shared, discriminator.embedding_network.get_layer('embeddings'))
    # Each encoder projects the shared E-wide embeddings to its width with its own kernel.
    self.assertIsNot(generator.embedding_network.get_layer('embedding_projection'),
                     discriminator.embedding_network.get_layer('embedding_projection'))

  @parameterized.named_parameters(
      ('electra_small', 0.25, 256, 128, 64), ('electra_base', 1 / 3, 768, 768, 256))
  def test_narrow_generator_ties_embeddings_and_projects_them(
      self, fraction, hidden, embedding, generator_hidden):
    config = testing_utils.tiny_encoder_config(num_layers=2).replace(
        hidden_size=hidden, intermediate_size=4 * hidden, num_attention_heads=hidden // 64,
        embedding_size=embedding)
    generator, discriminator = shared_encoders.build_generator_and_discriminator(
        config, num_generator_layers=2, num_shared_layers=0, generator_width_fraction=fraction)
    ids = tf.ones([2, 8], tf.int32)
    generator_output = generator([ids, ids, ids * 0])['sequence_output']
    discriminator_output = discriminator([ids, ids, ids * 0])['sequence_output']
    self.assertEqual((2, 8, generator_hidden), tuple(generator_output.shape))
    self.assertEqual((2, 8, hidden), tuple(discriminator_output.shape))
    self.assertIs(generator.get_embedding_table(), discriminator.get_embedding_table())
    block = generator.hidden_layers[0]
    self.assertEqual(4 * generator_hidden, block._inner_dim)  # pylint: disable=protected-access
    self.assertEqual(generator_hidden // 64,
                     block._num_heads)  # pylint: disable=protected-access
    # E == H for base: the discriminator uses the shared embeddings directly.
    has_projection = any(layer.name == 'embedding_projection'
                         for layer in discriminator.embedding_network.layers)
    self.assertEqual(embedding != hidden, has_projection)

  @parameterized.named_parameters(
      ('fractional_heads', 0.3, 0, 'whole, positive sizes'),
      ('shared_layers_need_full_width', 0.5, 1, 'needs a full-width generator'))
  def test_invalid_widths(self, fraction, shared, message):
    with self.assertRaisesRegex(ValueError, message):
      shared_encoders.build_generator_and_discriminator(
          testing_utils.tiny_encoder_config(num_layers=2), 2, shared,
          generator_width_fraction=fraction)

  def test_output_shapes(self):
    config = testing_utils.tiny_encoder_config(num_layers=2)
    generator, discriminator = shared_encoders.build_generator_and_discriminator(config, 1, 1)
    ids = tf.ones([2, 8], tf.int32)
    out = discriminator([ids, ids, tf.zeros_like(ids)])
    self.assertEqual((2, 8, 32), tuple(out['sequence_output'].shape))
    self.assertLen(out['encoder_outputs'], 2)
    self.assertEqual((2, 8, 32), tuple(generator([ids, ids, ids * 0])['sequence_output'].shape))

  @parameterized.named_parameters(
      ('too_deep_generator', 3, 0, r'num_generator_layers=3 must be in \[1, 2\]'),
      ('empty_generator', 0, 0, r'num_generator_layers=0 must be in \[1, 2\]'),
      ('shares_more_than_it_has', 1, 2, r'num_shared_layers=2 must be in \[0, 1\]'))
  def test_invalid_depths(self, generator_layers, shared, message):
    with self.assertRaisesRegex(ValueError, message):
      shared_encoders.build_generator_and_discriminator(
          testing_utils.tiny_encoder_config(num_layers=2), generator_layers, shared)


if __name__ == '__main__':
  tf.test.main()
