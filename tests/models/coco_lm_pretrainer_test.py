"""Tests of the COCO-LM pretrainer: corruption, dropout-free sampling, crops, gradients, export."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import encoders as encoder_configs
from teams_tf.losses import classification
from teams_tf.losses import clm
from teams_tf.losses import contrastive
from teams_tf.models import coco_lm_pretrainer
from tests import testing_utils


def _nonzero(grad):
  return grad is not None and float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(grad)))) > 0


def _encoder_inputs(batch, word_ids=None):
  return [batch['input_word_ids'] if word_ids is None else word_ids, batch['input_mask'],
          batch['input_type_ids']]


class CocoLmPretrainerTest(tf.test.TestCase, parameterized.TestCase):

  def test_output_shapes_and_dtypes(self):
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(testing_utils.tiny_coco_lm_config(),
                                                        seed=1)
    out = model(testing_utils.pretraining_batch(), training=True)
    b, t, p, v = 3, testing_utils.SEQ_LENGTH, testing_utils.NUM_PREDICTIONS, 100
    expected = dict(
        mlm_logits=(b, p, v), sampling_logits=(b, p, v), replaced_ids=(b, p),
        copy_labels=(b, t), copy_logits=(b, t), clm_logits=(b, p, v), lm_target_ids=(b, p),
        lm_input_ids=(b, p), lm_copy_logits=(b, p), lm_weights=(b, p),
        sequence_output=(b, t, 32), sequence_embedding=(b, 32), crop_sequence_embedding=(b, 32))
    self.assertEqual(set(expected), set(out))
    for key, shape in expected.items():
      self.assertEqual(shape, tuple(out[key].shape), key)
    for key in ('mlm_logits', 'copy_logits', 'copy_labels', 'clm_logits'):
      self.assertEqual(tf.float32, out[key].dtype, key)

  def test_corrupted_sequence_and_copy_labels(self):
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(testing_utils.tiny_coco_lm_config(),
                                                        seed=2)
    batch = testing_utils.pretraining_batch()
    out = {k: v.numpy() for k, v in model(batch).items()}
    positions = batch['masked_lm_positions'].numpy()
    weights = batch['masked_lm_weights'].numpy()
    original = batch['masked_lm_ids'].numpy()
    expected_labels = np.ones_like(out['copy_labels'])
    for b, p in zip(*np.nonzero(weights)):
      expected_labels[b, positions[b, p]] = float(out['replaced_ids'][b, p] == original[b, p])
    self.assertAllEqual(expected_labels, out['copy_labels'])
    # The LM targets are the original tokens, the LM inputs what the main model saw.
    self.assertAllEqual(original, out['lm_target_ids'])
    self.assertAllEqual(np.where(weights > 0, out['replaced_ids'], out['lm_input_ids']),
                        out['lm_input_ids'])
    self.assertAllClose(np.take_along_axis(out['copy_logits'], positions, 1),
                        out['lm_copy_logits'])

  def test_replacements_are_sampled_with_dropout_off(self):
    encoder = testing_utils.tiny_encoder_config().replace(
        dropout_rate=0.5, attention_dropout_rate=0.5)
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(
        testing_utils.tiny_coco_lm_config(encoder=encoder), seed=3)
    batch = testing_utils.pretraining_batch()
    out = model(batch, training=True)
    generator_output = model.generator_network(_encoder_inputs(batch), training=False)
    deterministic = model.masked_lm(generator_output['sequence_output'],
                                    batch['masked_lm_positions'])
    self.assertAllClose(deterministic, out['sampling_logits'], atol=1e-5)
    # The MLM loss still sees dropout.
    self.assertGreater(float(tf.reduce_max(tf.abs(out['mlm_logits'] - deterministic))), 1e-3)

  def test_sampling_from_the_training_pass_when_configured(self):
    encoder = testing_utils.tiny_encoder_config().replace(dropout_rate=0.5)
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(
        testing_utils.tiny_coco_lm_config(encoder=encoder, sample_without_dropout=False), seed=3)
    out = model(testing_utils.pretraining_batch(), training=True)
    self.assertAllEqual(out['mlm_logits'], out['sampling_logits'])

  def test_crop_is_a_view_of_the_original_sequence(self):
    # With the whole sequence kept, X^crop = X^orig: its h_[CLS] is the main model's on X^orig.
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(
        testing_utils.tiny_coco_lm_config(crop_fraction=1.0), seed=4)
    batch = testing_utils.pretraining_batch()
    out = model(batch)
    positions = batch['masked_lm_positions'].numpy()
    original = batch['input_word_ids'].numpy().copy()
    for b, p in zip(*np.nonzero(batch['masked_lm_weights'].numpy())):
      original[b, positions[b, p]] = batch['masked_lm_ids'].numpy()[b, p]
    expected = model.discriminator_network(_encoder_inputs(batch, tf.constant(original)))
    self.assertAllClose(expected['sequence_output'][:, 0], out['crop_sequence_embedding'],
                        atol=1e-5)

  def test_gradient_flow(self):
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(testing_utils.tiny_coco_lm_config(),
                                                        seed=5)
    batch = testing_utils.pretraining_batch()
    model(batch)
    main, auxiliary = model.discriminator_network, model.generator_network
    bias = main.hidden_layers[0]._attention_layer.position_bias  # pylint: disable=protected-access
    watched = dict(
        auxiliary=auxiliary.hidden_layers[0].trainable_variables[0],
        mlm_head=model.masked_lm.dense.kernel,
        main=main.hidden_layers[-1].trainable_variables[0],
        position_bias=bias.trainable_variables[0],
        embedding=main.get_embedding_table(),
        copy=model.clm_head.copy_dense.kernel,
        lm_output_bias=model.clm_head.output_bias)
    with tf.GradientTape(persistent=True) as tape:
      out = model(batch, training=True)
      losses = dict(
          mlm=classification.masked_lm_loss(
              out['mlm_logits'], batch['masked_lm_ids'], batch['masked_lm_weights']),
          copy=classification.rtd_loss(out['copy_logits'], out['copy_labels'],
                                       batch['input_mask']),
          lm=clm.corrective_lm_loss(out['clm_logits'], out['lm_copy_logits'],
                                    out['lm_target_ids'], out['lm_input_ids'],
                                    out['lm_weights']),
          scl=contrastive.sequence_contrastive_loss(out['sequence_embedding'],
                                                    out['crop_sequence_embedding']))
    grads = {name: dict(zip(watched, tape.gradient(loss, list(watched.values()))))
             for name, loss in losses.items()}
    # The auxiliary model learns only from MLM; nothing flows back through the sampling.
    self.assertTrue(_nonzero(grads['mlm']['auxiliary']))
    self.assertTrue(_nonzero(grads['mlm']['embedding']))
    for loss in ('copy', 'lm', 'scl'):
      self.assertFalse(_nonzero(grads[loss]['auxiliary']), loss)
      self.assertFalse(_nonzero(grads[loss]['mlm_head']), loss)
      for name in ('main', 'position_bias', 'embedding'):
        self.assertTrue(_nonzero(grads[loss][name]), (loss, name))
    self.assertTrue(_nonzero(grads['copy']['copy']))
    # Eq. (2)'s stop-gradient: L_LM does not train the copy probability.
    self.assertFalse(_nonzero(grads['lm']['copy']))
    self.assertTrue(_nonzero(grads['lm']['lm_output_bias']))

  def test_random_replacements_build_no_auxiliary_model(self):
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(
        testing_utils.tiny_coco_lm_config(replacement='random'), seed=6)
    out = model(testing_utils.pretraining_batch(batch_size=4), training=True)
    self.assertIsNone(model.generator_network)
    self.assertNotIn('mlm_logits', out)
    # Uniform over 100 ids: almost every masked token is replaced.
    self.assertGreater(float(tf.reduce_mean(1.0 - out['copy_labels'])), 0.05)

  def test_checkpoint_round_trip_resumes_sampling(self):
    config = testing_utils.tiny_coco_lm_config()
    batch = testing_utils.pretraining_batch()
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(config, seed=7)
    model(batch)
    path = tf.train.Checkpoint(model=model).save(self.get_temp_dir() + '/ckpt')
    expected = model(batch)
    restored = coco_lm_pretrainer.build_coco_lm_pretrainer(config, seed=8)
    restored(batch)
    tf.train.Checkpoint(model=restored).restore(path).assert_consumed()
    got = restored(batch)
    for key in ('replaced_ids', 'copy_logits', 'clm_logits', 'crop_sequence_embedding'):
      self.assertAllClose(expected[key], got[key], atol=1e-6, msg=key)

  @parameterized.named_parameters(('relative_positions', True), ('absolute_positions', False))
  def test_main_transformer_restores_into_model_garden_fine_tuning_encoder(self, relative):
    config = testing_utils.tiny_coco_lm_config(relative_position_bias=relative)
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(config, seed=9)
    batch = testing_utils.pretraining_batch()
    model(batch)
    path = tf.train.Checkpoint(**model.checkpoint_items).save(self.get_temp_dir() + '/ckpt')
    if relative:
      encoder_config = encoders.EncoderConfig(
          type='any', any=encoder_configs.RelativePositionEncoderConfig(
              **config.encoder.as_dict(), relative_position_num_buckets=8,
              relative_position_max_distance=16))
    else:
      encoder_config = encoders.EncoderConfig(type='bert_v2', bert_v2=config.encoder)
    encoder = encoders.build_encoder(encoder_config)
    inputs = dict(input_word_ids=batch['input_word_ids'], input_mask=batch['input_mask'],
                  input_type_ids=batch['input_type_ids'])
    encoder(inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).assert_existing_objects_matched()
    self.assertAllClose(model.discriminator_network(_encoder_inputs(batch))['sequence_output'],
                        encoder(inputs)['sequence_output'], atol=1e-5)

  def test_mixed_bfloat16_outputs_are_finite_float32(self):
    with testing_utils.keras_policy('mixed_bfloat16'):
      model = coco_lm_pretrainer.build_coco_lm_pretrainer(
          testing_utils.tiny_coco_lm_config(), seed=10)
      out = model(testing_utils.pretraining_batch(), training=True)
    for key in ('mlm_logits', 'copy_logits', 'clm_logits'):
      self.assertEqual(tf.float32, out[key].dtype, key)
      self.assertTrue(np.all(np.isfinite(out[key].numpy())), key)

  @parameterized.named_parameters(
      ('auxiliary_depth', dict(num_generator_layers=3), 'num_generator_layers=3 must be in'),
      ('replacement', dict(replacement='mask'), "replacement='mask' must be one of"),
      ('buckets', dict(relative_position_num_buckets=5), 'relative_position_num_buckets=5'),
      ('no_task', dict(copy_loss_weight=0.0, lm_loss_weight=0.0, scl_loss_weight=0.0),
       'would learn nothing'),
      ('untrained_copy', dict(copy_loss_weight=0.0), 'copy_loss_weight=0 leaves'),
      ('crop', dict(crop_fraction=0.0), r'crop_fraction=0.0 must be in \(0, 1\]'),
      ('positions', dict(lm_positions='replaced'), "lm_positions='replaced'"))
  def test_invalid_config_names_the_field(self, overrides, message):
    with self.assertRaisesRegex(ValueError, message):
      coco_lm_pretrainer.build_coco_lm_pretrainer(
          testing_utils.tiny_coco_lm_config(**overrides))


if __name__ == '__main__':
  tf.test.main()
