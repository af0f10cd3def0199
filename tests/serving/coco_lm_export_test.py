"""COCO-LM's main Transformer (relative positions) exported as a TF Hub encoder SavedModel."""

import os

import numpy as np
import tensorflow as tf

from teams_tf.serving import export_savedmodel
from tests.serving import export_testing_utils as utils

_SEQ_LENGTH = 24


class CocoLmEncoderExportTest(tf.test.TestCase):

  def test_exported_encoder_matches_the_main_transformer(self):
    work_dir = self.get_temp_dir()
    pretrain_dir = os.path.join(work_dir, 'pretrain')
    vocab_file = utils.copy_sample_vocab(work_dir)
    pretrainer, checkpoint = utils.write_coco_lm_pretraining_run(
        pretrain_dir, vocab_file, seq_length=_SEQ_LENGTH)
    export_dir = os.path.join(work_dir, 'export')
    exported = export_savedmodel.export_from_model_dir('encoder', pretrain_dir, export_dir)
    self.assertEqual(checkpoint, exported[0].checkpoint_path)
    encoder = tf.saved_model.load(os.path.join(export_dir, 'encoder'))
    preprocessor = tf.saved_model.load(os.path.join(export_dir, 'preprocessing'))
    inputs = preprocessor(tf.constant(utils.TEXTS))
    expected = utils.stack([utils.pack([tokens], _SEQ_LENGTH, 'round_robin')
                            for tokens in utils.tokenize(utils.TEXTS)])
    self.assertAllEqual(expected['input_word_ids'], inputs['input_word_ids'])
    served = encoder(inputs)['sequence_output'].numpy()
    keras = pretrainer.discriminator_network(
        [inputs['input_word_ids'], inputs['input_mask'], inputs['input_type_ids']],
        training=False)['sequence_output'].numpy()
    mask = inputs['input_mask'].numpy().astype(bool)
    self.assertAllClose(keras[mask], served[mask], atol=1e-5)
    # The served outputs depend on the exported relative position bias: another bias table
    # gives other outputs.
    layer = pretrainer.discriminator_network.hidden_layers[0]
    bias = layer._attention_layer.position_bias  # pylint: disable=protected-access
    bias.set_weights([np.random.default_rng(0).normal(size=bias.get_weights()[0].shape) * 3])
    other_bias = pretrainer.discriminator_network(
        [inputs['input_word_ids'], inputs['input_mask'], inputs['input_type_ids']],
        training=False)['sequence_output'].numpy()
    self.assertGreater(np.abs(other_bias[mask] - served[mask]).max(), 1e-3)


if __name__ == '__main__':
  tf.test.main()
