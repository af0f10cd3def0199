"""The Hugging Face export gives the same hidden states as our Keras encoder."""

import numpy as np
import tensorflow as tf
import torch
import transformers

from official.nlp.configs import encoders

from teams_tf.configs import encoders as encoder_configs
from teams_tf.data import embedded
from teams_tf.data import tokenization
from teams_tf.models import teams_pretrainer
from teams_tf.serving import hf_conversion
from tests import testing_utils


class HfConversionTest(tf.test.TestCase):

  def test_from_pretrained_matches_keras_hidden_states(self):
    vocab = tokenization.load_vocabulary(embedded.resolve_path('sample:vocab'))
    config = testing_utils.tiny_teams_config(
        encoder=testing_utils.tiny_encoder_config(vocab_size=vocab.size))
    pretrainer = teams_pretrainer.build_teams_pretrainer(config, seed=1)
    batch = testing_utils.pretraining_batch(vocab_size=vocab.size)
    pretrainer(batch)
    # Train-like weights: perturb every variable so biases and LayerNorms are not at init values.
    for variable in pretrainer.trainable_variables:
      variable.assign_add(tf.random.normal(variable.shape, stddev=0.05, seed=3))
    path = tf.train.Checkpoint(model=pretrainer, **pretrainer.checkpoint_items).save(
        self.get_temp_dir() + '/pretrain')
    encoder = encoders.build_encoder(
        encoders.EncoderConfig(type='bert_v2', bert_v2=config.encoder))
    inputs = {k: batch[k] for k in ('input_word_ids', 'input_mask', 'input_type_ids')}
    encoder(inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).expect_partial(
    ).assert_existing_objects_matched()
    expected = encoder(inputs)

    output_dir = self.get_temp_dir() + '/hf'
    hf_conversion.export_to_hf(encoder, config.encoder, vocab.path, lower_case=True,
                               pad_id=vocab.pad_id, output_dir=output_dir)
    model = transformers.ElectraModel.from_pretrained(output_dir).eval()
    with torch.no_grad():
      got = model(
          input_ids=torch.from_numpy(inputs['input_word_ids'].numpy()).long(),
          attention_mask=torch.from_numpy(inputs['input_mask'].numpy()).long(),
          token_type_ids=torch.from_numpy(inputs['input_type_ids'].numpy()).long(),
          output_hidden_states=True)
    real = inputs['input_mask'].numpy().astype(bool)
    self.assertLess(np.abs(got.last_hidden_state.numpy() - expected['sequence_output'].numpy())
                    [real].max(), 1e-4)
    for layer, ours in enumerate(expected['encoder_outputs']):
      diff = np.abs(got.hidden_states[layer + 1].numpy() - ours.numpy())[real].max()
      self.assertLess(diff, 1e-4, f'layer {layer + 1}')
    tokenizer = transformers.AutoTokenizer.from_pretrained(output_dir)
    self.assertEqual(vocab.cls_id, tokenizer('the cat')['input_ids'][0])

  def test_pre_ln_encoder_is_rejected(self):
    config = testing_utils.tiny_encoder_config()
    config.norm_first = True
    with self.assertRaisesRegex(ValueError, 'pre-LN'):
      hf_conversion.export_to_hf(None, config, '', True, 0, self.get_temp_dir())

  def test_relative_position_encoder_is_rejected(self):
    # COCO-LM's main Transformer: ElectraModel has no relative position bias to hold it.
    config = encoder_configs.RelativePositionEncoderConfig(
        **testing_utils.tiny_encoder_config().as_dict())
    with self.assertRaisesRegex(ValueError, 'relative position bias .* --kind=encoder'):
      hf_conversion.export_to_hf(None, config, '', True, 0, self.get_temp_dir())


if __name__ == '__main__':
  tf.test.main()
