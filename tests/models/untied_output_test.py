"""`tie_output_embeddings=False`: every objective's MLM output layer gets a table of its own."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tests import testing_utils

_BUILDS = testing_utils.PRETRAINER_BUILDS


def _input_table(model):
  network = getattr(model, 'encoder_network', None) or model.discriminator_network
  return network.get_embedding_table()


class UntiedOutputTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(*_BUILDS)
  def test_untied_table_is_its_own_and_only_it_scores_the_vocabulary(self, build, config_fn):
    config = config_fn().replace(tie_output_embeddings=False)
    model = build(config)
    batch = testing_utils.pretraining_batch()
    with tf.GradientTape() as tape:
      logits = model(batch, training=True)['mlm_logits']
      # The score of one vocabulary row that occurs nowhere in the input.
      absent = np.setdiff1d(np.arange(5, testing_utils.VOCAB_SIZE),
                            batch['input_word_ids'].numpy())[0]
      score = tf.reduce_sum(logits[..., absent])
    inputs, outputs = _input_table(model), model.masked_lm.embedding_table
    self.assertIsNot(inputs, outputs)
    self.assertEqual(inputs.shape, outputs.shape)
    self.assertIn('output_embeddings', outputs.name)
    self.assertIn(id(outputs), {id(v) for v in model.trainable_variables})
    input_grad, output_grad = tape.gradient(score, [inputs, outputs])
    # The absent token's row is read only by the output layer: its own table, never the inputs'.
    self.assertGreater(np.abs(tf.convert_to_tensor(output_grad).numpy()[absent]).sum(), 0)
    if input_grad is not None:
      self.assertAllEqual(np.zeros(inputs.shape[-1]),
                          tf.convert_to_tensor(input_grad).numpy()[absent])

  @parameterized.named_parameters(*_BUILDS)
  def test_untied_table_round_trips_through_a_checkpoint(self, build, config_fn):
    config = config_fn().replace(tie_output_embeddings=False)
    batch = testing_utils.pretraining_batch()
    model = build(config)
    model(batch, training=False)
    model.masked_lm.embedding_table.assign(
        np.random.default_rng(0).normal(size=model.masked_lm.embedding_table.shape))
    path = tf.train.Checkpoint(model=model).write(self.get_temp_dir() + '/ckpt')
    restored = build(config)
    restored(batch, training=False)
    tf.train.Checkpoint(model=restored).read(path).assert_consumed()
    self.assertAllClose(model.masked_lm.embedding_table, restored.masked_lm.embedding_table)

  @parameterized.named_parameters(*_BUILDS)
  def test_tied_by_default(self, build, config_fn):
    model = build(config_fn())
    model(testing_utils.pretraining_batch(), training=False)
    self.assertIs(_input_table(model), model.masked_lm.embedding_table)


if __name__ == '__main__':
  tf.test.main()
