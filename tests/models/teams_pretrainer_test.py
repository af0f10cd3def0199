"""Tests of the TEAMS pretrainer: outputs, labels, gradient flow, checkpoints."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf.losses import classification
from teams_tf.losses import mws
from teams_tf.models import teams_pretrainer
from tests import testing_utils


def _nonzero(grad):
  return grad is not None and float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(grad)))) > 0


class TeamsPretrainerTest(tf.test.TestCase, parameterized.TestCase):

  def test_output_shapes_and_dtypes(self):
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=1)
    out = model(testing_utils.pretraining_batch(), training=True)
    b, t, p, k = 3, testing_utils.SEQ_LENGTH, testing_utils.NUM_PREDICTIONS, 3
    expected = dict(mlm_logits=(b, p, testing_utils.VOCAB_SIZE), replaced_ids=(b, p),
                    corrupted_weights=(b, p), rtd_logits=(b, t), rtd_labels=(b, t),
                    mws_logits=(b, p, k + 1),
                    candidate_ids=(b, p, k + 1), sequence_output=(b, t, 32))
    self.assertEqual(set(expected), set(out))
    for key, shape in expected.items():
      self.assertEqual(shape, tuple(out[key].shape), key)
    for key in ('mlm_logits', 'rtd_logits', 'rtd_labels', 'mws_logits'):
      self.assertEqual(tf.float32, out[key].dtype, key)

  def test_corruption_labels_and_candidates(self):
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=2)
    batch = testing_utils.pretraining_batch()
    out = {k: v.numpy() for k, v in model(batch).items()}
    positions = batch['masked_lm_positions'].numpy()
    weights = batch['masked_lm_weights'].numpy()
    original = batch['masked_lm_ids'].numpy()
    expected_labels = np.ones_like(out['rtd_labels'])
    for b, p in zip(*np.nonzero(weights)):
      expected_labels[b, positions[b, p]] = float(
          out['replaced_ids'][b, p] == original[b, p])
    self.assertAllEqual(expected_labels, out['rtd_labels'])
    self.assertAllEqual(original, out['candidate_ids'][..., 0])
    for b, p in zip(*np.nonzero(weights)):
      self.assertNotIn(original[b, p], out['candidate_ids'][b, p, 1:])

  def test_corruption_fraction_corrupts_a_random_subset_of_the_masked_positions(self):
    batch = testing_utils.pretraining_batch(batch_size=8, seq_length=32, num_predictions=12)
    full = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=5)
    part = teams_pretrainer.build_teams_pretrainer(
        testing_utils.tiny_teams_config(corruption_fraction=0.375), seed=5)
    full(batch), part(batch)
    part.set_weights(full.get_weights())
    full_out = {k: v.numpy() for k, v in full(batch, training=True).items()}
    out = {k: v.numpy() for k, v in part(batch, training=True).items()}
    weights = batch['masked_lm_weights'].numpy()
    original = batch['masked_lm_ids'].numpy()
    self.assertAllEqual(weights, full_out['corrupted_weights'])
    corrupted = out['corrupted_weights'] > 0
    self.assertTrue(np.all(corrupted <= (weights > 0)))
    # Same stream: the corrupted positions carry the very sample the fraction-1 model uses, the
    # others their original token, which RTD then labels original.
    live = weights > 0
    self.assertAllEqual(np.where(corrupted, full_out['replaced_ids'], original)[live],
                        out['replaced_ids'][live])
    positions = batch['masked_lm_positions'].numpy()
    for b, p in zip(*np.nonzero(live & ~corrupted)):
      self.assertEqual(1.0, out['rtd_labels'][b, positions[b, p]])
    # 8 rows of 12 - b predictions, each kept with probability 0.375: 3 sigma is about 0.14.
    share = corrupted.sum() / live.sum()
    self.assertBetween(share, 0.375 - 0.15, 0.375 + 0.15)
    # Fresh positions every step.
    self.assertNotAllEqual(out['corrupted_weights'],
                           part(batch, training=True)['corrupted_weights'])
    # Evaluation corrupts every masked position, so held-out metrics compare across runs.
    self.assertAllEqual(batch['masked_lm_weights'], part(batch)['corrupted_weights'])

  def test_gradient_flow(self):
    config = testing_utils.tiny_teams_config()  # 2-layer generator sharing layer 0.
    model = teams_pretrainer.build_teams_pretrainer(config, seed=3)
    batch = testing_utils.pretraining_batch()
    model(batch)
    gen, disc = model.generator_network, model.discriminator_network
    shared_layer, gen_only, disc_top = (
        disc.hidden_layers[0], gen.hidden_layers[1], disc.hidden_layers[1])
    embedding = disc.get_embedding_table()
    watched = dict(
        shared=shared_layer.trainable_variables[0], generator_only=gen_only.trainable_variables[0],
        discriminator_top=disc_top.trainable_variables[0], embedding=embedding,
        mlm_head=model.masked_lm.dense.kernel,
        mws_head=model.mws_head.dense.kernel)
    with tf.GradientTape(persistent=True) as tape:
      out = model(batch, training=True)
      mlm = classification.masked_lm_loss(
          out['mlm_logits'], batch['masked_lm_ids'], batch['masked_lm_weights'])
      rtd = classification.rtd_loss(out['rtd_logits'], out['rtd_labels'], batch['input_mask'])
      mws_value = mws.mws_loss(out['mws_logits'], batch['masked_lm_weights'])
    grads = {name: dict(zip(watched, tape.gradient(loss, list(watched.values()))))
             for name, loss in (('mlm', mlm), ('rtd', rtd), ('mws', mws_value))}
    # The generator learns only from MLM; nothing flows back through sampling.
    self.assertTrue(_nonzero(grads['mlm']['generator_only']))
    self.assertTrue(_nonzero(grads['mlm']['mlm_head']))
    for loss in ('rtd', 'mws'):
      self.assertFalse(_nonzero(grads[loss]['generator_only']), loss)
      self.assertFalse(_nonzero(grads[loss]['mlm_head']), loss)
      # Discriminator losses reach the shared layer and the tied embeddings.
      self.assertTrue(_nonzero(grads[loss]['shared']), loss)
      self.assertTrue(_nonzero(grads[loss]['embedding']), loss)
    self.assertTrue(_nonzero(grads['mlm']['shared']))
    # MLM does not train discriminator-only layers; MWS does, RTD (fed by layer L-1) does not.
    self.assertFalse(_nonzero(grads['mlm']['discriminator_top']))
    self.assertTrue(_nonzero(grads['mws']['discriminator_top']))
    self.assertFalse(_nonzero(grads['rtd']['discriminator_top']))
    self.assertTrue(_nonzero(grads['mws']['mws_head']))
    for var, grad in zip(model.rtd_head.trainable_variables,
                         tape.gradient(rtd, model.rtd_head.trainable_variables)):
      self.assertTrue(_nonzero(grad), var.name)

  def test_rtd_head_can_read_the_top_layer(self):
    config = testing_utils.tiny_teams_config(rtd_head_input_layer=2)
    model = teams_pretrainer.build_teams_pretrainer(config, seed=3)
    batch = testing_utils.pretraining_batch()
    top = model.discriminator_network.hidden_layers[1]
    model(batch)
    with tf.GradientTape() as tape:
      out = model(batch, training=True)
      rtd = classification.rtd_loss(out['rtd_logits'], out['rtd_labels'], batch['input_mask'])
    self.assertTrue(_nonzero(tape.gradient(rtd, top.trainable_variables[0])))

  def test_checkpoint_restores_weights_and_sampling_stream(self):
    config = testing_utils.tiny_teams_config()
    batch = testing_utils.pretraining_batch()
    model = teams_pretrainer.build_teams_pretrainer(config, seed=4)
    model(batch)
    path = tf.train.Checkpoint(model=model).save(self.get_temp_dir() + '/ckpt')
    expected = model(batch)
    restored = teams_pretrainer.build_teams_pretrainer(config, seed=99)
    restored(batch)
    tf.train.Checkpoint(model=restored).restore(path).assert_existing_objects_matched()
    got = restored(batch)
    for key in ('mlm_logits', 'replaced_ids', 'rtd_logits', 'mws_logits', 'candidate_ids'):
      self.assertAllClose(expected[key], got[key], msg=key)

  def test_kept_encoder_restores_into_model_garden_bert_v2(self):
    # Model Garden's trainer saves `checkpoint_items` at the checkpoint root; fine-tuning tasks
    # restore `encoder` into `encoders.build_encoder(type=bert_v2)` and require a full match.
    config = testing_utils.tiny_teams_config()
    model = teams_pretrainer.build_teams_pretrainer(config, seed=6)
    batch = testing_utils.pretraining_batch()
    model(batch)
    path = tf.train.Checkpoint(model=model, **model.checkpoint_items).save(
        self.get_temp_dir() + '/pretrain')
    encoder = encoders.build_encoder(
        encoders.EncoderConfig(type='bert_v2', bert_v2=config.encoder))
    inputs = {k: batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')}
    encoder(inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).expect_partial(
    ).assert_existing_objects_matched()
    expected = model.discriminator_network(
        [inputs['input_word_ids'], inputs['input_mask'], inputs['input_type_ids']])
    got = encoder(inputs)
    self.assertAllClose(expected['sequence_output'], got['sequence_output'], atol=1e-6)
    self.assertAllClose(expected['pooled_output'], got['pooled_output'], atol=1e-6)
    for ours, theirs in zip(expected['encoder_outputs'], got['encoder_outputs']):
      self.assertAllClose(ours, theirs, atol=1e-6)

  def test_mixed_bfloat16(self):
    with testing_utils.keras_policy('mixed_bfloat16'):
      model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=5)
      out = model(testing_utils.pretraining_batch(), training=True)
      for key in ('mlm_logits', 'rtd_logits', 'mws_logits'):
        self.assertEqual(tf.float32, out[key].dtype, key)
        self.assertTrue(np.all(np.isfinite(out[key].numpy())), key)

  @parameterized.named_parameters(
      ('too_deep_generator', dict(num_generator_layers=3), 'num_generator_layers=3 must be'),
      ('narrow_shared_generator', dict(generator_width_fraction=0.5),
       'needs a full-width generator'),
      ('no_task', dict(rtd_loss_weight=0.0, mws_loss_weight=0.0), 'both 0'),
      ('negative_weight', dict(mws_loss_weight=-1.0), 'mws_loss_weight=-1.0 must be >= 0'),
      ('bad_head', dict(rtd_head_type='linear'), "rtd_head_type='linear'"),
      ('rtd_export_needs_attention', dict(rtd_head_type='ffn',
                                          exported_representation='rtd_task_layer'),
       'needs the attention RTD head'),
      ('mws_task_layer_without_mws', dict(mws_task_layer=True, mws_loss_weight=0.0),
       'needs the MWS task'),
      ('bad_export', dict(exported_representation='rtd'), "exported_representation='rtd'"),
      ('too_many_shared', dict(num_shared_layers=3), r'num_shared_layers=3 must be in'),
      ('rtd_layer_zero', dict(rtd_head_input_layer=0), r'rtd_head_input_layer=0 must be'),
      ('bad_strategy', dict(candidate_sampling='random'), "'random'"),
      ('no_corruption', dict(corruption_fraction=0.0), r'corruption_fraction=0.0 must be in'),
      ('corruption_above_one', dict(corruption_fraction=1.5), r'corruption_fraction=1.5'))
  def test_invalid_configs_name_the_field(self, overrides, message):
    with self.assertRaisesRegex(ValueError, message):
      teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(**overrides))

  def test_default_sharing_is_bottom_half_of_generator(self):
    config = testing_utils.tiny_teams_config(
        encoder=testing_utils.tiny_encoder_config(num_layers=4), num_generator_layers=None,
        num_shared_layers=None)
    model = teams_pretrainer.build_teams_pretrainer(config)
    gen, disc = model.generator_network, model.discriminator_network
    self.assertLen(gen.hidden_layers, 2)
    self.assertIs(gen.hidden_layers[0], disc.hidden_layers[0])
    self.assertIsNot(gen.hidden_layers[1], disc.hidden_layers[1])


if __name__ == '__main__':
  tf.test.main()
