"""Fine-tuned SentencePredictionTask -> raw-text SavedModel, served in a fresh process."""

import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders
from official.nlp.data import sentence_prediction_dataloader
from official.nlp.tasks import sentence_prediction

from teams_tf.serving import export_modules
from teams_tf.serving import export_savedmodel
from teams_tf.tasks import sentence_prediction_task
from tests.serving import export_testing_utils as utils

_SEQ_LENGTH = 24
_FIELDS = ['premise', 'hypothesis']
_HYPOTHESES = ['', 'Über den Wolken', 'short', utils.LONG_TEXT]

_SERVE = '''
for name, run in inputs['runs'].items():
  model = tf.saved_model.load(run['path'])
  serve_text = model.signatures['serving_default']
  outputs[name] = dict(
      inputs=sorted(serve_text.structured_input_signature[1]),
      text={key: to_py(value) for key, value in serve_text(
          **{field: tf.constant(texts) for field, texts in run['texts'].items()}).items()},
      token_ids=to_py(model.signatures['serve_token_ids'](
          **{key: tf.constant(ids, tf.int32) for key, ids in run['ids'].items()})['outputs']))
'''


def _encoder_config():
  # Head weights ~ N(0, 1) (the head uses the encoder's initializer_range) give O(1) logits, so
  # the 1e-5 comparisons below are meaningful; the encoder itself comes from the checkpoint.
  return encoders.EncoderConfig(
      type='bert_v2', bert_v2=utils.tiny_encoder_config(initializer_range=1.0))


class TextClassifierTest(tf.test.TestCase):
  """A 3-class pair classifier (Model Garden's [CLS] head) and a one-segment mean-pooled regressor
  from one tiny pretraining run."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tempfile.mkdtemp()
    pretrain_dir = os.path.join(cls.work_dir, 'pretrain')
    vocab_file = utils.copy_sample_vocab(cls.work_dir)
    utils.write_pretraining_run(pretrain_dir, vocab_file, seq_length=_SEQ_LENGTH)
    first, second = utils.tokenize(utils.TEXTS), utils.tokenize(_HYPOTHESES)
    cls.pair_ids = utils.stack([utils.pack([a, b], _SEQ_LENGTH, 'round_robin')
                                for a, b in zip(first, second)])

    # Raw-text GLUE data config: params.yaml holds the vocabulary and the text fields.
    cls.classifier_dir = os.path.join(cls.work_dir, 'classifier')
    cls.classifier = utils.fine_tune(sentence_prediction.SentencePredictionTask(
        sentence_prediction.SentencePredictionConfig(
            init_checkpoint=pretrain_dir, validation_data=None,
            model=sentence_prediction.ModelConfig(num_classes=3, encoder=_encoder_config()),
            train_data=sentence_prediction_dataloader.SentencePredictionTextDataConfig(
                text_fields=_FIELDS, vocab_file=vocab_file, lower_case=True,
                seq_length=_SEQ_LENGTH))), cls.classifier_dir,
        dict(cls.pair_ids, label=np.array([0, 1, 2, 1])))
    # TFRecord GLUE data config: the vocabulary comes from the pretraining run's params.yaml.
    # The regressor encodes each sentence alone and predicts 5 x their cosine (this project's
    # siamese head: two encoder passes in one graph).
    cls.regressor_dir = os.path.join(cls.work_dir, 'regressor')
    cls.regressor = utils.fine_tune(sentence_prediction_task.SentencePredictionTask(
        sentence_prediction_task.SentencePredictionConfig(
            init_checkpoint=pretrain_dir, validation_data=None,
            model=sentence_prediction_task.ModelConfig(
                num_classes=1, encoder=_encoder_config(), pooling='siamese_cosine',
                regression_mean=2.0, regression_std=1.5),
            train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(
                seq_length=_SEQ_LENGTH))), cls.regressor_dir,
        dict(cls.pair_ids, label_ids=np.array([0.5, 1.0, 4.0, 2.5], np.float32)))

    export_dir = os.path.join(cls.work_dir, 'export')
    export_savedmodel.export_from_model_dir(
        'classifier', cls.classifier_dir, os.path.join(export_dir, 'classifier'))
    export_savedmodel.export_from_model_dir(
        'classifier', cls.regressor_dir, os.path.join(export_dir, 'regressor'),
        text_fields=list(_FIELDS))
    os.remove(vocab_file)  # The SavedModels must carry their own copy.
    cls.served = utils.run_in_fresh_process(_SERVE, dict(runs=dict(
        classifier=dict(path=os.path.join(export_dir, 'classifier'),
                        texts=dict(premise=utils.TEXTS, hypothesis=_HYPOTHESES),
                        ids={k: v.tolist() for k, v in cls.pair_ids.items()}),
        regressor=dict(path=os.path.join(export_dir, 'regressor'),
                       texts=dict(premise=utils.TEXTS, hypothesis=_HYPOTHESES),
                       ids={k: v.tolist() for k, v in cls.pair_ids.items()}))), cls.work_dir)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.work_dir)
    super().tearDownClass()

  def _keras_logits(self, model, ids):
    return model({k: tf.constant(v) for k, v in ids.items()}, training=False).numpy()

  def test_classifier_serves_raw_text_like_the_keras_model(self):
    logits = self._keras_logits(self.classifier, self.pair_ids)
    self.assertGreater(np.abs(logits).max(), 0.5)  # Not a vacuous comparison.
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    served = self.served['classifier']['text']
    self.assertEqual({'label', 'probabilities', 'logits'}, set(served))
    self.assertAllClose(logits, served['logits'], atol=1e-5, rtol=0)
    self.assertAllClose(probabilities, served['probabilities'], atol=1e-5, rtol=0)
    self.assertAllEqual(logits.argmax(-1), served['label'])

  def test_regressor_serves_a_score(self):
    logits = self._keras_logits(self.regressor, self.pair_ids)
    served = self.served['regressor']['text']
    self.assertEqual({'score'}, set(served))
    self.assertAllClose(logits[:, 0], served['score'], atol=1e-5, rtol=1e-6)

  def test_token_id_signature_matches_the_keras_model(self):
    for name, model in (('classifier', self.classifier), ('regressor', self.regressor)):
      self.assertAllClose(self._keras_logits(model, self.pair_ids), self.served[name]['token_ids'],
                          atol=1e-5, rtol=1e-6, msg=name)

  def test_text_fields_name_the_signature_inputs(self):
    self.assertEqual(sorted(_FIELDS), self.served['classifier']['inputs'])
    self.assertEqual(sorted(_FIELDS), self.served['regressor']['inputs'])
    self.assertEqual([], self.served['imported_project_modules'])

  def test_export_needs_text_fields_when_params_lack_them(self):
    with self.assertRaisesRegex(ValueError, r'Pass --text_fields: it is not set by '
                                r'task\.train_data\.text_fields'):
      export_savedmodel.export_from_model_dir(
          'classifier', self.regressor_dir, os.path.join(self.work_dir, 'unused'))

  def test_module_rejects_bad_arguments(self):
    kwargs = dict(num_classes=3, text_fields=['a'], vocab_file='sample:vocab', lower_case=True,
                  seq_length=_SEQ_LENGTH)
    for override, message in ((dict(text_fields=['a', 'b', 'c']), 'one or two distinct'),
                              (dict(text_fields=['a', 'a']), 'one or two distinct'),
                              (dict(num_classes=0), r'num_classes=0 must be >= 1'),
                              (dict(text_fields=['a', 'b'], seq_length=4), 'seq_length=4')):
      with self.assertRaisesRegex(ValueError, message):
        export_modules.TextClassifier(self.classifier, **dict(kwargs, **override))


if __name__ == '__main__':
  tf.test.main()
