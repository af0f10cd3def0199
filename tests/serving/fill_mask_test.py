"""COCO-LM's [MASK] filler SavedModel: packing, positions and p_LM against NumPy."""

import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # pylint: disable=unused-import  (registers the tokenizer ops)

from teams_tf.serving import export_savedmodel
from teams_tf.serving import fill_mask
from tests.serving import export_testing_utils as utils

_SEQ_LENGTH = 16
_TEXTS = ['the [MASK] of the city', 'no mask here', '[MASK] [MASK].', '']


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


class FillMaskTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tf.compat.v1.test.get_temp_dir()
    pretrain_dir = os.path.join(cls.work_dir, 'coco_lm')
    vocab_file = utils.copy_sample_vocab(cls.work_dir)
    cls.pretrainer, _ = utils.write_coco_lm_pretraining_run(
        pretrain_dir, vocab_file, seq_length=_SEQ_LENGTH)
    cls.export_dir = os.path.join(cls.work_dir, 'fill_mask')
    cls.exported = export_savedmodel.export_from_model_dir('fill_mask', pretrain_dir,
                                                           cls.export_dir)
    cls.loaded = tf.saved_model.load(cls.export_dir)

  def test_text_signature_fills_every_mask_with_p_lm(self):
    out = {k: v.numpy() for k, v in self.loaded.signatures['serving_default'](
        text=tf.constant(_TEXTS)).items()}
    mask_id = utils.VOCAB.mask_id
    # Packing: [CLS] pieces joined by [MASK] [SEP], as the project tokenizer splits the pieces.
    for text, ids in zip(_TEXTS, out['input_word_ids']):
      pieces = utils.tokenize(text.split('[MASK]'))
      tokens = sum((piece + [mask_id] for piece in pieces), [])[:-1]
      expected = utils.pack([tokens], _SEQ_LENGTH, 'round_robin')['input_word_ids']
      self.assertAllEqual(expected, ids, msg=text)
    self.assertEqual((4, 2), out['mask_positions'].shape)
    self.assertAllEqual([[2, -1], [-1, -1], [1, 2], [-1, -1]], out['mask_positions'])
    self.assertEqual((4, 2, 5), out['top_ids'].shape)
    # p_LM at a [MASK] input (Eq. 2): p_copy(0|h) · softmax(x^T h), computed here in NumPy.
    inputs = [tf.constant(out['input_word_ids']),
              tf.cast(tf.not_equal(out['input_word_ids'], 0), tf.int32),
              tf.zeros_like(out['input_word_ids'])]
    sequence = self.pretrainer.discriminator_network(inputs, training=False)['sequence_output']
    head = self.pretrainer.clm_head(sequence)
    logits, copy = head['clm_logits'].numpy(), head['copy_logits'].numpy()
    for b, m in zip(*np.nonzero(out['mask_positions'] >= 0)):
      t = out['mask_positions'][b, m]
      softmax = np.exp(logits[b, t] - logits[b, t].max())
      probabilities = (1 - _sigmoid(copy[b, t])) * softmax / softmax.sum()
      probabilities[mask_id] = -1.0  # Never proposed.
      best = np.argsort(-probabilities)[:5]
      self.assertAllEqual(best, out['top_ids'][b, m])
      self.assertAllClose(probabilities[best], out['top_probabilities'][b, m], atol=1e-5)
      self.assertAllEqual([utils.VOCAB.tokens[i].encode() for i in best],
                          out['top_tokens'][b, m])
    self.assertAllEqual(np.zeros((2, 5)), out['top_probabilities'][1])

  def test_token_id_signature_returns_a_distribution(self):
    ids = tf.constant([[2, 50, 4, 60, 3, 0]])
    out = self.loaded.signatures['serve_token_ids'](
        input_word_ids=ids, input_mask=tf.cast(ids > 0, tf.int32),
        input_type_ids=tf.zeros_like(ids), masked_lm_positions=tf.constant([[2, 3]]))
    self.assertEqual((1, 2, utils.VOCAB.size), out['log_probs'].shape)
    self.assertAllClose([[1.0, 1.0]], tf.reduce_sum(tf.exp(out['log_probs']), -1), atol=1e-5)

  def test_model_without_lm_output_is_refused(self):
    pretrainer, _ = utils.write_coco_lm_pretraining_run(
        os.path.join(self.work_dir, 'rtd_only'), utils.VOCAB.path, seq_length=_SEQ_LENGTH,
        lm_loss_weight=0.0, scl_loss_weight=0.0)
    with self.assertRaisesRegex(ValueError, 'no language-model output'):
      fill_mask.FillMask(pretrainer, fill_mask.FillMaskParams(
          vocab_file=utils.VOCAB.path, lower_case=True, seq_length=_SEQ_LENGTH))

  def test_a_non_coco_lm_run_is_a_clear_error(self):
    teams_dir = os.path.join(self.work_dir, 'teams')
    utils.write_pretraining_run(teams_dir, utils.VOCAB.path, seq_length=_SEQ_LENGTH)
    with self.assertRaisesRegex(ValueError, 'is not a teams_tf.configs.models.CocoLmConfig'):
      export_savedmodel.export_from_model_dir('fill_mask', teams_dir,
                                              os.path.join(self.work_dir, 'x'))


if __name__ == '__main__':
  tf.test.main()
