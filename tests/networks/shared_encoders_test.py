"""Tests of generator/discriminator construction with shared embeddings and layers."""

from absl.testing import parameterized
import tensorflow as tf

from teams_tf.networks import shared_encoders
from tests import testing_utils


def _variable_ids(layer):
  return {id(v) for v in layer.trainable_variables}


class SharedEncodersTest(tf.test.TestCase, parameterized.TestCase):

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
    self.assertIs(generator.embedding_network, discriminator.embedding_network)

  def test_output_shapes(self):
    config = testing_utils.tiny_encoder_config(num_layers=2)
    generator, discriminator = shared_encoders.build_generator_and_discriminator(config, 1, 1)
    ids = tf.ones([2, 8], tf.int32)
    out = discriminator([ids, ids, tf.zeros_like(ids)])
    self.assertEqual((2, 8, 32), tuple(out['sequence_output'].shape))
    self.assertLen(out['encoder_outputs'], 2)
    self.assertEqual((2, 8, 32), tuple(generator([ids, ids, ids * 0])['sequence_output'].shape))

  @parameterized.named_parameters(
      ('too_deep_generator', 3, 0, 'generator needs 1 to 2'),
      ('empty_generator', 0, 0, 'generator needs 1 to 2'),
      ('shares_more_than_it_has', 1, 2, r'num_shared_layers=2 must be in \[0, 1\]'))
  def test_invalid_depths(self, generator_layers, shared, message):
    with self.assertRaisesRegex(ValueError, message):
      shared_encoders.build_generator_and_discriminator(
          testing_utils.tiny_encoder_config(num_layers=2), generator_layers, shared)


if __name__ == '__main__':
  tf.test.main()
