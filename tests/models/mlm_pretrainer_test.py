"""Tests of the BERT-MLM pretrainer: outputs, gradient flow, tied embeddings, checkpoints."""

import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders
from official.nlp.modeling import networks
from official.nlp.tasks import sentence_prediction

from teams_tf.losses import classification
from teams_tf.models import mlm_pretrainer
from tests import testing_utils

_ENCODER_KEYS = ('input_word_ids', 'input_mask', 'input_type_ids')


def _nonzero(grad):
  return grad is not None and float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(grad)))) > 0


def _mlm_loss(model, batch):
  out = model(batch, training=True)
  return classification.masked_lm_loss(
      out['mlm_logits'], batch['masked_lm_ids'], batch['masked_lm_weights'])


class MlmPretrainerTest(tf.test.TestCase):

  def test_output_shapes_and_dtypes(self):
    model = mlm_pretrainer.build_mlm_pretrainer(testing_utils.tiny_mlm_config())
    out = model(testing_utils.pretraining_batch(), training=True)
    b, t, p, v, h = (3, testing_utils.SEQ_LENGTH, testing_utils.NUM_PREDICTIONS,
                     testing_utils.VOCAB_SIZE, 32)
    self.assertEqual({'mlm_logits', 'sequence_output', 'pooled_output', 'encoder_outputs'},
                     set(out))
    self.assertEqual((b, p, v), tuple(out['mlm_logits'].shape))
    self.assertEqual(tf.float32, out['mlm_logits'].dtype)
    self.assertEqual((b, t, h), tuple(out['sequence_output'].shape))
    self.assertEqual((b, h), tuple(out['pooled_output'].shape))
    self.assertLen(out['encoder_outputs'], 2)
    self.assertIsInstance(model.encoder_network, networks.BertEncoderV2)

  def test_every_trainable_variable_learns_from_mlm_and_embeddings_are_tied(self):
    model = mlm_pretrainer.build_mlm_pretrainer(testing_utils.tiny_mlm_config())
    batch = testing_utils.pretraining_batch()
    embedding = model.encoder_network.get_embedding_table()
    # The output layer of Eq. (2) is the input embedding table itself (same variable).
    self.assertIs(embedding, model.masked_lm.embedding_table)
    # No loss reads the pooler, so it is kept out of training (but stays in the checkpoint).
    pooler_ids = {id(v) for v in model.encoder_network.pooler_layer.weights}
    self.assertFalse(pooler_ids & {id(v) for v in model.trainable_variables})
    with tf.GradientTape() as tape:
      loss = _mlm_loss(model, batch)
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    # The encoder's and the MLM head's: dense kernel and bias, LayerNorm gamma, beta, output bias.
    self.assertLen(variables, len(model.encoder_network.trainable_variables) + 5)
    for var, grad in zip(variables, grads):
      self.assertTrue(_nonzero(grad), var.name)
    # Rows of ids that occur nowhere in the input get a gradient only through the output layer,
    # which shows the MLM softmax uses the tied table.
    embedding_grad = tf.convert_to_tensor(
        grads[[i for i, v in enumerate(variables) if v is embedding][0]]).numpy()
    absent = np.setdiff1d(np.arange(testing_utils.VOCAB_SIZE),
                          batch['input_word_ids'].numpy())
    self.assertNotEmpty(absent)
    self.assertTrue(np.all(np.abs(embedding_grad[absent]).sum(axis=-1) > 0))

  def test_checkpoint_restores_the_pretrainer(self):
    config = testing_utils.tiny_mlm_config()
    batch = testing_utils.pretraining_batch()
    model = mlm_pretrainer.build_mlm_pretrainer(config)
    model(batch)  # Builds the MLM head (the encoder is built by BertPretrainerV2 itself).
    path = tf.train.Checkpoint(model=model).save(self.get_temp_dir() + '/ckpt')
    restored = mlm_pretrainer.build_mlm_pretrainer(config)
    restored(batch)
    tf.train.Checkpoint(model=restored).restore(path).assert_existing_objects_matched()
    self.assertAllEqual(model(batch)['mlm_logits'], restored(batch)['mlm_logits'])

  def test_encoder_restores_into_model_garden_bert_v2_fine_tuning(self):
    # Model Garden's trainer saves `checkpoint_items` at the checkpoint root; its fine-tuning
    # tasks restore `encoder` into a `bert_v2` encoder from `init_checkpoint`.
    config = testing_utils.tiny_mlm_config()
    model = mlm_pretrainer.build_mlm_pretrainer(config)
    path = tf.train.Checkpoint(model=model, **model.checkpoint_items).save(
        self.get_temp_dir() + '/pretrain')
    task = sentence_prediction.SentencePredictionTask(
        sentence_prediction.SentencePredictionConfig(
            init_checkpoint=path,
            model=sentence_prediction.ModelConfig(
                num_classes=2,
                encoder=encoders.EncoderConfig(type='bert_v2', bert_v2=config.encoder))))
    classifier = task.build_model()
    task.initialize(classifier)  # Requires every encoder variable to be matched.
    batch = testing_utils.pretraining_batch()
    inputs = {k: batch[k] for k in _ENCODER_KEYS}
    expected = model.encoder_network(inputs)
    got = classifier.checkpoint_items['encoder'](inputs)
    # Same weights; the embedding projection is the rank-3 einsum here and Model Garden's
    # '...x,xy->...y' there, whose CPU kernels may round differently (1 ulp on AVX2 machines).
    for key in ('sequence_output', 'pooled_output'):
      self.assertAllClose(expected[key], got[key], rtol=1e-6, atol=1e-6, msg=key)
    for ours, theirs in zip(expected['encoder_outputs'], got['encoder_outputs']):
      self.assertAllClose(ours, theirs, rtol=1e-6, atol=1e-6)

  def test_mixed_bfloat16_loss_is_float32_and_finite(self):
    with testing_utils.keras_policy('mixed_bfloat16'):
      model = mlm_pretrainer.build_mlm_pretrainer(testing_utils.tiny_mlm_config())
      batch = testing_utils.pretraining_batch()
      outputs = model(batch, training=True)
      loss = _mlm_loss(model, batch)
    # The head computes in bfloat16 and returns float32 logits (`mlm_head.MaskedLM`).
    self.assertEqual(tf.bfloat16, model.masked_lm.compute_dtype)
    self.assertEqual(tf.float32, outputs['mlm_logits'].dtype)
    self.assertEqual(tf.float32, loss.dtype)
    self.assertTrue(np.isfinite(float(loss)))


if __name__ == '__main__':
  tf.test.main()
