"""ELECTRA, MWS-only and the TEAMS ablations as configurations of `TeamsPretrainer`."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.configs import encoders
from official.nlp.modeling import layers

from teams_tf.layers import rtd_head
from teams_tf.models import teams_pretrainer
from tests import testing_utils


def _built(seed=1, **overrides):
  fields = dict(encoder=testing_utils.tiny_encoder_config(num_layers=4), num_negatives=2)
  config = testing_utils.tiny_teams_config(**dict(fields, **overrides))
  model = teams_pretrainer.build_teams_pretrainer(config, seed=seed)
  model(testing_utils.pretraining_batch())
  return config, model


def _attention_layers(model):
  """Distinct multi-head attention layers anywhere in the model."""
  found = {}
  for module in model.submodules:
    if isinstance(module, tf_keras.layers.MultiHeadAttention):
      found[id(module)] = module
  return list(found.values())


def _restored_kept_encoder(model, config, num_layers, test_dir):
  """BertEncoderV2 of `num_layers` layers restored from the model's `encoder` checkpoint item."""
  path = tf.train.Checkpoint(model=model, **model.checkpoint_items).save(test_dir + '/ckpt')
  encoder = encoders.build_encoder(encoders.EncoderConfig(
      type='bert_v2', bert_v2=config.encoder.replace(num_layers=num_layers)))
  batch = testing_utils.pretraining_batch()
  inputs = {k: batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')}
  encoder(inputs)
  # Model Garden's fine-tuning restore: every encoder variable must come from the checkpoint.
  tf.train.Checkpoint(encoder=encoder).read(path).expect_partial(
  ).assert_existing_objects_matched()
  return encoder, inputs


class TeamsVariantsTest(tf.test.TestCase, parameterized.TestCase):

  def test_electra_configuration(self):
    config, model = _built(
        num_generator_layers=4, generator_width_fraction=0.5, num_shared_layers=0,
        rtd_head_type='ffn', rtd_loss_weight=50.0, mws_loss_weight=0.0)
    out = model(testing_utils.pretraining_batch())
    self.assertNotIn('mws_logits', out)
    self.assertNotIn('candidate_ids', out)
    self.assertIsNone(model.mws_head)
    self.assertIsInstance(model.rtd_head, rtd_head.FfnRtdHead)
    self.assertEqual(4, teams_pretrainer.resolve_layout(config)['rtd_head_input_layer'])
    self.assertLen(model.generator_network.hidden_layers, 4)
    batch = testing_utils.pretraining_batch()
    generator_out = model.generator_network(
        [batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')])
    self.assertEqual(16, generator_out['sequence_output'].shape[-1])  # Half of H = 32.
    self.assertIs(model.generator_network.get_embedding_table(),
                  model.discriminator_network.get_embedding_table())
    # ELECTRA's RTD head reads the discriminator's top layer: its logits change with layer L.
    with tf.GradientTape() as tape:
      logits = model(testing_utils.pretraining_batch())['rtd_logits']
    top = model.discriminator_network.hidden_layers[-1].trainable_variables[0]
    self.assertIsNotNone(tape.gradient(logits, top))

  def test_mws_only_has_no_rtd_head(self):
    _, model = _built(rtd_loss_weight=0.0)
    out = model(testing_utils.pretraining_batch())
    self.assertIsNone(model.rtd_head)
    self.assertNotIn('rtd_logits', out)
    self.assertIn('mws_logits', out)
    # rtd_labels still describe the corruption (for the replaced-fraction metric).
    self.assertIn('rtd_labels', out)

  @parameterized.named_parameters(('full_tie', 2), ('no_tie', 0), ('default_half', None))
  def test_sharing_levels(self, shared):
    _, model = _built(num_generator_layers=None, num_shared_layers=shared)
    generator = model.generator_network.hidden_layers
    discriminator = model.discriminator_network.hidden_layers
    self.assertLen(generator, 2)  # None = half of the 4 discriminator layers.
    expected_shared = {2: 2, 0: 0, None: 1}[shared]
    for i, layer in enumerate(generator):
      self.assertEqual(i < expected_shared, layer is discriminator[i], i)
    generator_variables = {id(v) for v in model.generator_network.trainable_variables}
    discriminator_variables = {
        id(v) for layer in discriminator for v in layer.trainable_variables}
    self.assertLen(generator_variables & discriminator_variables,
                   expected_shared * len(discriminator[0].trainable_variables))

  @parameterized.parameters(1, 2, 3, 4)
  def test_generator_depth_from_one_layer_to_the_discriminator_depth(self, depth):
    # Figure 4: generator depth varies, the bottom half of it tied (None).
    _, model = _built(num_generator_layers=depth, num_shared_layers=None)
    self.assertLen(model.generator_network.hidden_layers, depth)
    shared = sum(g is d for g, d in zip(model.generator_network.hidden_layers,
                                        model.discriminator_network.hidden_layers))
    self.assertEqual(depth // 2, shared)

  def test_ffn_heads_have_no_extra_attention_layer(self):
    _, attention_model = _built()
    _, ffn_model = _built(rtd_head_type='ffn')
    self.assertIsInstance(ffn_model.rtd_head, rtd_head.FfnRtdHead)
    self.assertEmpty(_attention_layers(ffn_model.rtd_head))
    # 4 discriminator layers + 1 unshared generator layer; the attention variant has one more.
    self.assertLen(_attention_layers(ffn_model), 5)
    self.assertLen(_attention_layers(attention_model), 6)
    # The FFN head reads layer L (TEAMS Table 3, Figure 2 left).
    with tf.GradientTape() as tape:
      logits = ffn_model(testing_utils.pretraining_batch())['rtd_logits']
    top = ffn_model.discriminator_network.hidden_layers[-1].trainable_variables[0]
    self.assertIsNotNone(tape.gradient(logits, top))

  def test_rtd_outputs_export_the_rtd_branch(self):
    config, model = _built(exported_representation='rtd_task_layer')
    layout = teams_pretrainer.resolve_layout(config)
    self.assertEqual(4, layout['kept_encoder_layers'])  # Layers 1..3 + the RTD task layer.
    encoder, inputs = _restored_kept_encoder(model, config, 4, self.get_temp_dir())
    word_ids, mask, type_ids = (inputs['input_word_ids'], inputs['input_mask'],
                                inputs['input_type_ids'])
    layer_outputs = model.discriminator_network([word_ids, mask, type_ids])['encoder_outputs']
    attention_mask = layers.SelfAttentionMask()(layer_outputs[2], mask)
    rtd_branch = model.rtd_head.task_layer([layer_outputs[2], attention_mask])
    got = encoder(inputs)['sequence_output']
    self.assertAllClose(rtd_branch, got, atol=1e-5)
    # ... and not the MWS representation (discriminator layer L).
    self.assertGreater(float(tf.reduce_max(tf.abs(got - layer_outputs[3]))), 1e-3)

  def test_top_task_layers_export_l_plus_one_layers(self):
    config, model = _built(rtd_head_input_layer=4, mws_task_layer=True)
    self.assertEqual(5, teams_pretrainer.resolve_layout(config)['kept_encoder_layers'])
    self.assertIsInstance(model.rtd_head, rtd_head.AttentionRtdHead)
    encoder, inputs = _restored_kept_encoder(model, config, 5, self.get_temp_dir())
    word_ids, mask, type_ids = (inputs['input_word_ids'], inputs['input_mask'],
                                inputs['input_type_ids'])
    top = model.discriminator_network([word_ids, mask, type_ids])['sequence_output']
    attention_mask = layers.SelfAttentionMask()(top, mask)
    expected = model.mws_task_layer([top, attention_mask])
    self.assertAllClose(expected, encoder(inputs)['sequence_output'], atol=1e-5)

  @parameterized.named_parameters(('sampled', 'sampled'), ('hardest', 'hardest'))
  def test_sampling_strategy_reaches_the_candidates(self, strategy):
    _, model = _built(candidate_sampling=strategy, num_negatives=3)
    batch = testing_utils.pretraining_batch()
    first = model(batch)['candidate_ids'].numpy()
    second = model(batch)['candidate_ids'].numpy()
    # Dropout is 0 in the tiny config, so only the sampler's noise can change the negatives.
    self.assertEqual(strategy == 'hardest', bool(np.all(
        np.sort(first, -1) == np.sort(second, -1))))


  @parameterized.parameters(1, 50)
  def test_number_of_negatives_spans_figure_5(self, k):
    _, model = _built(num_negatives=k)
    batch = testing_utils.pretraining_batch()
    out = model(batch)
    self.assertEqual((3, testing_utils.NUM_PREDICTIONS, k + 1), tuple(out['mws_logits'].shape))
    weights = batch['masked_lm_weights'].numpy()
    for b, p in zip(*np.nonzero(weights)):
      candidates = out['candidate_ids'][b, p].numpy()
      self.assertLen(set(candidates), k + 1)  # The original and K distinct negatives.


if __name__ == '__main__':
  tf.test.main()
