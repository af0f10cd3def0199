"""The Hugging Face export gives our Keras encoder's hidden states and our preprocessor's ids."""

import shutil
import tempfile

import numpy as np
import tensorflow as tf
import torch
import transformers

from official.nlp.configs import encoders
from official.nlp.tools import export_tfhub_lib

from teams_tf.configs import encoders as encoder_configs
from teams_tf.data import embedded
from teams_tf.data import tokenization
from teams_tf.models import teams_pretrainer
from teams_tf.serving import hf_conversion
from tests import testing_utils

_SEQ_LENGTH = 32


class HfConversionTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.vocab = tokenization.load_vocabulary(embedded.resolve_path('sample:vocab'))
    config = testing_utils.tiny_teams_config(
        encoder=testing_utils.tiny_encoder_config(vocab_size=cls.vocab.size))
    pretrainer = teams_pretrainer.build_teams_pretrainer(config, seed=1)
    batch = testing_utils.pretraining_batch(vocab_size=cls.vocab.size)
    pretrainer(batch)
    # Train-like weights: perturb every variable so biases and LayerNorms are not at init values.
    for variable in pretrainer.trainable_variables:
      variable.assign_add(tf.random.normal(variable.shape, stddev=0.05, seed=3))
    cls.tmp = tempfile.mkdtemp()
    path = tf.train.Checkpoint(model=pretrainer, **pretrainer.checkpoint_items).save(
        cls.tmp + '/pretrain')
    encoder = encoders.build_encoder(
        encoders.EncoderConfig(type='bert_v2', bert_v2=config.encoder))
    cls.inputs = {k: batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')}
    encoder(cls.inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).expect_partial(
    ).assert_existing_objects_matched()
    cls.expected = encoder(cls.inputs)
    cls.output_dir = cls.tmp + '/hf'
    hf_conversion.export_to_hf(encoder, config.encoder, cls.vocab.path, lower_case=True,
                               pad_id=cls.vocab.pad_id, output_dir=cls.output_dir)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.tmp)
    super().tearDownClass()

  def test_from_pretrained_matches_keras_hidden_states(self):
    model = transformers.ElectraModel.from_pretrained(self.output_dir).eval()
    inputs = {k: torch.from_numpy(v.numpy()).long() for k, v in self.inputs.items()}
    with torch.no_grad():
      got = model(input_ids=inputs['input_word_ids'], attention_mask=inputs['input_mask'],
                  token_type_ids=inputs['input_type_ids'], output_hidden_states=True)
    real = self.inputs['input_mask'].numpy().astype(bool)
    self.assertLess(np.abs(got.last_hidden_state.numpy() - self.expected['sequence_output'].numpy())
                    [real].max(), 1e-4)
    for layer, ours in enumerate(self.expected['encoder_outputs']):
      diff = np.abs(got.hidden_states[layer + 1].numpy() - ours.numpy())[real].max()
      self.assertLess(diff, 1e-4, f'layer {layer + 1}')

  def test_tokenizer_gives_the_savedmodel_preprocessors_ids(self):
    # Real held-out Wikipedia paragraphs: accents, digits, dashes, quotes, truncation at T.
    with open(embedded.resolve_path('sample:valid'), encoding='utf-8') as f:
      lines = [line for line in f.read().splitlines() if line]
    sentences = lines[:6] + [line for line in lines if not line.isascii()][:4]
    preprocessing_dir = self.tmp + '/preprocessing'
    export_tfhub_lib.export_preprocessing(
        preprocessing_dir, vocab_file=self.vocab.path, do_lower_case=True,
        tokenize_with_offsets=False, default_seq_length=_SEQ_LENGTH)
    preprocess = tf.saved_model.load(preprocessing_dir)
    expected = preprocess(tf.constant(sentences))['input_word_ids'].numpy()
    tokenizer = transformers.AutoTokenizer.from_pretrained(self.output_dir)
    self.assertLen(tokenizer, self.vocab.size)
    got = tokenizer(sentences, padding='max_length', truncation=True,
                    max_length=_SEQ_LENGTH)['input_ids']
    for sentence, ours, theirs in zip(sentences, expected, got):
      self.assertEqual(ours.tolist(), theirs, sentence)
    # Most words are in the sample vocabulary: [UNK]s are the exception, not the rule.
    self.assertLess(np.mean(expected == self.vocab.unk_id), 0.05)

  def test_pre_ln_encoder_is_rejected(self):
    config = testing_utils.tiny_encoder_config()
    config.norm_first = True
    with self.assertRaisesRegex(ValueError, r'pre-LN blocks .* --kind=encoder'):
      hf_conversion.export_to_hf(None, config, '', True, 0, self.get_temp_dir())

  def test_relative_position_encoder_is_rejected(self):
    # COCO-LM's main Transformer: ElectraModel has no relative position bias to hold it.
    config = encoder_configs.RelativePositionEncoderConfig(
        **testing_utils.tiny_encoder_config().as_dict())
    with self.assertRaisesRegex(ValueError, r'relative position bias.*--kind=encoder'):
      hf_conversion.export_to_hf(None, config, '', True, 0, self.get_temp_dir())

  def test_demo_encoder_is_rejected_with_what_it_has_and_how_to_get_a_convertible_run(self):
    # The kept encoder of every `*_demo` / `*_mini` run, as the loaders build it from params.yaml.
    config = encoder_configs.RelativePositionEncoderConfig(
        **testing_utils.tiny_encoder_config().as_dict())
    config.norm_first = True
    with self.assertRaises(ValueError) as raised:
      hf_conversion.export_to_hf(None, config, '', True, 0, self.get_temp_dir())
    message = str(raised.exception)
    self.assertIn('pre-LN blocks (norm_first=True) and a T5 relative position bias', message)
    self.assertIn('task.model.encoder.norm_first=false,task.model.relative_position_bias=false',
                  message)
    self.assertNotIn('coco_lm', message)


if __name__ == '__main__':
  tf.test.main()
