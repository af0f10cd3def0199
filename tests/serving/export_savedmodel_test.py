"""Encoder export through tools/export_savedmodel.py, served in a fresh process; export errors."""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

from teams_tf.serving import export_savedmodel
from teams_tf.serving import loaders
from tests.serving import export_testing_utils as utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_SEQ_LENGTH = 24  # Written to the pretraining params.yaml; the preprocessor's default T.
_PAIR_SEQ_LENGTH = 20  # Overrides T when packing two segments.
_SECOND_SEGMENTS = ['Über den Wolken', 'short', utils.LONG_TEXT, '']

_SERVE = '''
encoder = tf.saved_model.load(inputs['encoder'])
preprocessor = tf.saved_model.load(inputs['preprocessing'])
one = preprocessor(tf.constant(inputs['texts']))
outputs['one_segment'] = {key: to_py(value) for key, value in one.items()}
two = preprocessor.bert_pack_inputs(
    [preprocessor.tokenize(tf.constant(texts)) for texts in inputs['pairs']],
    seq_length=tf.constant(inputs['pair_seq_length']))
outputs['two_segments'] = {key: to_py(value) for key, value in two.items()}
encoded = encoder(one)  # The TF Hub call; serving must not apply dropout.
outputs['encoded'] = {key: to_py(encoded[key])
                      for key in ('sequence_output', 'pooled_output', 'default')}
outputs['encoder_outputs'] = [to_py(layer) for layer in encoded['encoder_outputs']]
outputs['do_lower_case'] = bool(encoder.do_lower_case.numpy())
outputs['vocab_asset'] = encoder.vocab_file.asset_path.numpy().decode()
'''


class ExportSavedModelTest(tf.test.TestCase):
  """Exports the encoder of one tiny pretraining run with the CLI; errors use the same run."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tempfile.mkdtemp()
    cls.pretrain_dir = os.path.join(cls.work_dir, 'pretrain')
    vocab_file = utils.copy_sample_vocab(cls.work_dir)
    cls.pretrainer, cls.checkpoint = utils.write_pretraining_run(
        cls.pretrain_dir, vocab_file, seq_length=_SEQ_LENGTH)
    cls.export_dir = os.path.join(cls.work_dir, 'export')
    cls.cli = subprocess.run(
        [sys.executable, os.path.join(_ROOT, 'tools', 'export_savedmodel.py'), '--kind=encoder',
         f'--model_dir={cls.pretrain_dir}', f'--export_dir={cls.export_dir}'],
        capture_output=True, text=True, timeout=300, check=False)
    if cls.cli.returncode:
      raise AssertionError(f'export_savedmodel.py failed:\n{cls.cli.stderr[-4000:]}')
    os.remove(vocab_file)  # The SavedModels must carry their own copy.
    cls.served = utils.run_in_fresh_process(_SERVE, dict(
        encoder=os.path.join(cls.export_dir, 'encoder'),
        preprocessing=os.path.join(cls.export_dir, 'preprocessing'), texts=utils.TEXTS,
        pairs=[utils.TEXTS, _SECOND_SEGMENTS], pair_seq_length=_PAIR_SEQ_LENGTH), cls.work_dir)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.work_dir)
    super().tearDownClass()

  def test_cli_prints_what_it_exported_and_where(self):
    self.assertIn(f'wrote {os.path.join(self.export_dir, "encoder")} from {self.checkpoint}',
                  self.cli.stdout)
    self.assertIn(f'wrote {os.path.join(self.export_dir, "preprocessing")} from '
                  f'{self.checkpoint}', self.cli.stdout)
    self.assertIn(f'T={_SEQ_LENGTH}', self.cli.stdout)

  def test_preprocessor_packs_one_segment_like_the_project_tokenizer(self):
    expected = utils.stack([utils.pack([tokens], _SEQ_LENGTH, 'round_robin')
                            for tokens in utils.tokenize(utils.TEXTS)])
    for key, value in expected.items():
      self.assertAllEqual(value, self.served['one_segment'][key], msg=key)
    # The empty text is [CLS] [SEP]; the 5000-character text fills all T positions.
    self.assertAllEqual([2, _SEQ_LENGTH], expected['input_mask'][1:3].sum(axis=1))

  def test_preprocessor_packs_two_segments(self):
    first, second = utils.tokenize(utils.TEXTS), utils.tokenize(_SECOND_SEGMENTS)
    expected = utils.stack([utils.pack([a, b], _PAIR_SEQ_LENGTH, 'round_robin')
                            for a, b in zip(first, second)])
    for key, value in expected.items():
      self.assertAllEqual(value, self.served['two_segments'][key], msg=key)

  def test_encoder_matches_the_pretrained_discriminator(self):
    inputs = self.served['one_segment']
    expected = self.pretrainer.discriminator_network(
        [tf.constant(inputs[key], tf.int32)
         for key in ('input_word_ids', 'input_mask', 'input_type_ids')], training=False)
    encoded = self.served['encoded']
    batch, hidden = len(utils.TEXTS), utils.tiny_encoder_config().hidden_size
    self.assertEqual((batch, _SEQ_LENGTH, hidden), np.shape(encoded['sequence_output']))
    self.assertEqual((batch, hidden), np.shape(encoded['pooled_output']))
    self.assertAllClose(expected['sequence_output'], encoded['sequence_output'], atol=1e-5,
                        rtol=0)
    self.assertAllClose(expected['pooled_output'], encoded['pooled_output'], atol=1e-5, rtol=0)
    self.assertAllEqual(encoded['pooled_output'], encoded['default'])
    self.assertLen(self.served['encoder_outputs'], len(expected['encoder_outputs']))
    for ours, served in zip(expected['encoder_outputs'], self.served['encoder_outputs']):
      self.assertAllClose(ours, served, atol=1e-5, rtol=0)

  def test_kept_encoder_depth_comes_from_the_checkpoint(self):
    # TEAMS Table 3 "Add task head on 12th layer": the kept encoder is L + 1 layers deep.
    model_dir = os.path.join(self.get_temp_dir(), 'top_task_layers')
    vocab_file = utils.copy_sample_vocab(self.get_temp_dir())
    pretrainer, _ = utils.write_pretraining_run(
        model_dir, vocab_file, seq_length=_SEQ_LENGTH, rtd_head_input_layer=2,
        mws_task_layer=True)
    encoder, encoder_config, _, _ = loaders.restore_pretrained_encoder(model_dir)
    self.assertEqual(3, encoder_config.bert_v2.num_layers)
    ids = tf.constant([[2, 10, 11, 3]], tf.int32)
    inputs = [ids, tf.ones_like(ids), tf.zeros_like(ids)]
    top = pretrainer.discriminator_network(inputs)['sequence_output']
    expected = pretrainer.mws_task_layer(
        [top, tf.ones([1, 4, 4], tf.float32)])  # Every token attends to every token.
    got = encoder(dict(input_word_ids=ids, input_mask=inputs[1], input_type_ids=inputs[2]))
    self.assertAllClose(expected, got['sequence_output'], atol=1e-5, rtol=0)

  def test_saved_models_are_self_contained(self):
    self.assertEqual([], self.served['imported_project_modules'])
    self.assertTrue(self.served['do_lower_case'])
    self.assertStartsWith(self.served['vocab_asset'], os.path.join(self.export_dir, 'encoder'))


  def _export(self, kind='encoder', model_dir=None, **kwargs):
    return export_savedmodel.export_from_model_dir(
        kind, model_dir or self.pretrain_dir, os.path.join(self.work_dir, 'out'), **kwargs)

  def test_seq_length_longer_than_the_encoder(self):
    with self.assertRaisesRegex(ValueError, r'seq_length=64 exceeds .*max_position_embeddings=32'):
      self._export(seq_length=64, vocab_file='sample:vocab')

  def test_vocabulary_of_another_size(self):
    path = os.path.join(self.work_dir, 'small_vocab.txt')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a']) + '\n')
    with self.assertRaisesRegex(ValueError, r'has 6 tokens but the encoder has vocab_size=3660'):
      self._export(vocab_file=path)

  def test_wrong_kind_for_the_run(self):
    with self.assertRaisesRegex(ValueError,
                                r'task\.model .* is not a .*ModelConfig \(wrong --kind'):
      self._export('classifier', text_fields=['sentence'])

  def test_directory_without_params(self):
    with self.assertRaisesRegex(ValueError, r'params\.yaml does not exist'):
      self._export(model_dir=self.get_temp_dir())

  def test_unknown_kind(self):
    with self.assertRaisesRegex(ValueError, r"Unknown kind 'tagging'; valid kinds are encoder"):
      self._export('tagging')


if __name__ == '__main__':
  tf.test.main()
