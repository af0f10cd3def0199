"""SCRIPT pretrainer: one set of weights for both passes, labels, gradient paths, checkpoints."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf.losses import classification
from teams_tf.losses import self_critic
from teams_tf.models import script_pretrainer
from tests import testing_utils


class ScriptPretrainerTest(tf.test.TestCase, parameterized.TestCase):

  def test_outputs_and_critic_labels(self):
    model = script_pretrainer.build_script_pretrainer(testing_utils.tiny_script_config(), seed=1)
    batch = testing_utils.pretraining_batch()
    out = {k: v.numpy() for k, v in model(batch, training=True).items()}
    b, t, p, v = 3, testing_utils.SEQ_LENGTH, testing_utils.NUM_PREDICTIONS, 100
    shapes = dict(mlm_logits=(b, p, v), replaced_ids=(b, p), critic_labels=(b, t),
                  critic_log_odds=(b, t), sequence_output=(b, t, 32))
    self.assertEqual(shapes, {k: out[k].shape for k in out})
    positions = batch['masked_lm_positions'].numpy()
    original = batch['masked_lm_ids'].numpy()
    expected = np.ones((b, t), np.float32)
    for row, slot in zip(*np.nonzero(batch['masked_lm_weights'].numpy())):
      expected[row, positions[row, slot]] = float(out['replaced_ids'][row, slot] ==
                                                   original[row, slot])
    self.assertAllEqual(expected, out['critic_labels'])

  def test_no_parameters_beyond_bert_and_both_passes_share_them(self):
    config = testing_utils.tiny_script_config()
    model = script_pretrainer.build_script_pretrainer(config, seed=2)
    batch = testing_utils.pretraining_batch()
    model(batch)
    self.assertEqual(testing_utils.bert_parameter_count(config.encoder),
                     testing_utils.parameter_count(model))
    # Pass 2 runs the very encoder and head of pass 1: its critic log-odds are the head's
    # logsumexp on the encoder's output for x̄.
    out = model(batch)
    corrupted = batch['input_word_ids'].numpy().copy()
    positions = batch['masked_lm_positions'].numpy()
    for row, slot in zip(*np.nonzero(batch['masked_lm_weights'].numpy())):
      corrupted[row, positions[row, slot]] = out['replaced_ids'].numpy()[row, slot]
    inputs = dict(input_word_ids=tf.constant(corrupted), input_mask=batch['input_mask'],
                  input_type_ids=batch['input_type_ids'])
    all_positions = tf.broadcast_to(tf.range(corrupted.shape[1]), corrupted.shape)
    scores, _ = model.scores(inputs, all_positions)
    self.assertAllClose(tf.reduce_logsumexp(scores, -1), out['critic_log_odds'], atol=1e-4)

  @parameterized.named_parameters(('hard_sample', False), ('straight_through', True))
  def test_discriminator_gradient_reaches_pass_one_only_straight_through(self, straight):
    model = script_pretrainer.build_script_pretrainer(
        testing_utils.tiny_script_config(straight_through=straight), seed=3)
    batch = testing_utils.pretraining_batch()
    with tf.GradientTape(persistent=True) as tape:
      out = model(batch, training=True)
      disc = self_critic.self_critic_loss(out['critic_log_odds'], out['critic_labels'],
                                          batch['input_mask'])
      mlm = classification.masked_lm_loss(out['mlm_logits'], batch['masked_lm_ids'],
                                          batch['masked_lm_weights'])
    through_sample = tape.gradient(disc, out['mlm_logits'])
    if straight:
      self.assertGreater(float(tf.reduce_sum(tf.abs(through_sample))), 0)
    else:
      self.assertIsNone(through_sample)
    # Both losses train the shared encoder and head either way.
    watched = [model.encoder_network.trainable_variables[0], model.masked_lm.dense.kernel]
    for loss in (disc, mlm):
      for gradient in tape.gradient(loss, watched):
        self.assertGreater(float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(gradient)))), 0)

  def test_kept_encoder_restores_into_model_garden_bert_v2(self):
    config = testing_utils.tiny_script_config()
    model = script_pretrainer.build_script_pretrainer(config, seed=4)
    batch = testing_utils.pretraining_batch()
    model(batch)
    path = tf.train.Checkpoint(model=model, **model.checkpoint_items).save(
        self.get_temp_dir() + '/ckpt')
    encoder = encoders.build_encoder(encoders.EncoderConfig(type='bert_v2',
                                                            bert_v2=config.encoder))
    inputs = {k: batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')}
    encoder(inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).expect_partial(
    ).assert_existing_objects_matched()
    self.assertAllClose(model.encoder_network(inputs)['sequence_output'],
                        encoder(inputs)['sequence_output'])

  def test_mixed_bfloat16_straight_through_is_finite(self):
    with testing_utils.keras_policy('mixed_bfloat16'):
      model = script_pretrainer.build_script_pretrainer(
          testing_utils.tiny_script_config(straight_through=True), seed=5)
      out = model(testing_utils.pretraining_batch(), training=True)
    self.assertEqual(tf.float32, out['critic_log_odds'].dtype)
    self.assertTrue(np.all(np.isfinite(out['critic_log_odds'].numpy())))

  def test_invalid_temperature_names_the_field(self):
    with self.assertRaisesRegex(ValueError, 'gumbel_temperature=0.0 must be > 0'):
      script_pretrainer.build_script_pretrainer(
          testing_utils.tiny_script_config(gumbel_temperature=0.0))


if __name__ == '__main__':
  tf.test.main()
