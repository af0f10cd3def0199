"""Fine-tuned QuestionAnsweringTask -> raw-text SavedModel, served in a fresh process; spans."""

import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras
import yaml

from official.nlp.configs import encoders
from official.nlp.data import question_answering_dataloader
from official.nlp.tasks import question_answering

from teams_tf.serving import export_modules
from teams_tf.serving import export_savedmodel
from tests.serving import export_testing_utils as utils

_SEQ_LENGTH = 32
_MAX_QUERY_LENGTH = 8
_MAX_ANSWER_LENGTH = 5
_QUESTIONS = ['Where is Tokyo?', '', utils.LONG_TEXT, 'Ça va?', 'What?']
_CONTEXTS = ['Tokyo is the capital of Japan.', 'Ça va? 東京 — naïve', 'The quick brown fox.',
             utils.LONG_TEXT, '']

_SERVE = '''
model = tf.saved_model.load(inputs['path'])
answers = model.signatures['serving_default'](
    question=tf.constant(inputs['questions']), context=tf.constant(inputs['contexts']))
outputs['text'] = {key: to_py(value) for key, value in answers.items()}
logits = model.signatures['serve_token_ids'](
    **{key: tf.constant(ids, tf.int32) for key, ids in inputs['ids'].items()})
outputs['token_ids'] = {key: to_py(value) for key, value in logits.items()}
'''


def _best_span(start_logits, end_logits, first, stop):
  """Brute-force best span over context positions [first, stop): (start, end, score)."""
  best = (0, 0, -np.inf)
  for start in range(first, stop):
    for end in range(start, min(stop, start + _MAX_ANSWER_LENGTH)):
      if start_logits[start] + end_logits[end] > best[2]:
        best = (start, end, start_logits[start] + end_logits[end])
  return best


class TextQuestionAnsweringExportTest(tf.test.TestCase):
  """A span labeler fine-tuned from a tiny pretraining run, exported and served from raw text."""

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tempfile.mkdtemp()
    pretrain_dir = os.path.join(cls.work_dir, 'pretrain')
    vocab_file = utils.copy_sample_vocab(cls.work_dir)
    utils.write_pretraining_run(pretrain_dir, vocab_file, seq_length=_SEQ_LENGTH)
    cls.questions = [ids[:_MAX_QUERY_LENGTH] for ids in utils.tokenize(_QUESTIONS)]
    cls.contexts = utils.tokenize(_CONTEXTS)
    cls.ids = utils.stack([utils.pack([q, c], _SEQ_LENGTH, 'waterfall')
                           for q, c in zip(cls.questions, cls.contexts)])
    squad_dir = cls.squad_dir = os.path.join(cls.work_dir, 'squad')
    # Head weights ~ N(0, 1) (the head uses the encoder's initializer_range) give O(1) logits;
    # vocab_file '' (as in the SQuAD experiments) is read from the pretraining run.
    cls.model = utils.fine_tune(question_answering.QuestionAnsweringTask(
        question_answering.QuestionAnsweringConfig(
            init_checkpoint=pretrain_dir, max_answer_length=_MAX_ANSWER_LENGTH,
            validation_data=None, model=question_answering.ModelConfig(
                encoder=encoders.EncoderConfig(
                    type='bert_v2', bert_v2=utils.tiny_encoder_config(initializer_range=1.0))),
            train_data=question_answering_dataloader.QADataConfig(
                seq_length=_SEQ_LENGTH, query_length=_MAX_QUERY_LENGTH, vocab_file=''))),
        squad_dir, dict(cls.ids, start_positions=np.array([8, 3, 11, 6, 0]),
                        end_positions=np.array([9, 5, 12, 8, 0])))
    export_dir = os.path.join(cls.work_dir, 'export')
    export_savedmodel.export_from_model_dir('squad', squad_dir, export_dir)
    os.remove(vocab_file)  # The SavedModel must carry what it needs.
    cls.served = utils.run_in_fresh_process(_SERVE, dict(
        path=export_dir, questions=_QUESTIONS, contexts=_CONTEXTS,
        ids={k: v.tolist() for k, v in cls.ids.items()}), cls.work_dir)
    cls.start_logits, cls.end_logits = [
        x.numpy() for x in cls.model({k: tf.constant(v) for k, v in cls.ids.items()},
                                     training=False)]

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.work_dir)
    super().tearDownClass()

  def test_logits_match_the_keras_model(self):
    self.assertGreater(np.abs(self.start_logits).max(), 0.5)  # Not a vacuous comparison.
    for outputs in (self.served['text'], self.served['token_ids']):
      self.assertAllClose(self.start_logits, outputs['start_logits'], atol=1e-5, rtol=0)
      self.assertAllClose(self.end_logits, outputs['end_logits'], atol=1e-5, rtol=0)
    self.assertEqual([], self.served['imported_project_modules'])

  def test_a_run_without_a_pretraining_run_exports_with_its_dev_vocabulary(self):
    # A random-init run (no task.init_checkpoint) names its vocabulary only where it reads the
    # dev JSON.
    run_dir = os.path.join(self.work_dir, 'squad_random_init')
    shutil.copytree(self.squad_dir, run_dir)
    params = os.path.join(run_dir, 'params.yaml')
    with open(params) as f:
      config = yaml.safe_load(f)
    config['task']['init_checkpoint'] = ''
    config['task']['validation_data'] = dict(
        config['task']['train_data'], vocab_file=utils.copy_sample_vocab(self.work_dir),
        is_training=False)
    with open(params, 'w') as f:
      yaml.safe_dump(config, f)
    exported = export_savedmodel.export_from_model_dir(
        'squad', run_dir, os.path.join(self.work_dir, 'random_init_export'))
    self.assertTrue(os.path.exists(os.path.join(exported[0].path, 'saved_model.pb')))

  def test_best_span_matches_brute_force(self):
    served = self.served['text']
    for b, (question, context) in enumerate(zip(self.questions, self.contexts)):
      first = len(question) + 2
      stop = min(first + len(context), _SEQ_LENGTH - 1)
      start, end, score = _best_span(self.start_logits[b], self.end_logits[b], first, stop)
      self.assertEqual(start, served['start_position'][b], msg=b)
      self.assertEqual(end, served['end_position'][b], msg=b)
      self.assertAllClose(score, served['score'][b], atol=1e-5, rtol=0, msg=b)

  def test_answers_are_substrings_of_the_context(self):
    served = self.served['text']
    for b, context in enumerate(_CONTEXTS):
      start, end = served['answer_start'][b], served['answer_end'][b]
      self.assertEqual(context[start:end], served['answer_text'][b], msg=b)
      self.assertEqual(bool(context), bool(served['answer_text'][b]), msg=b)
    # The empty context has no span.
    self.assertEqual(float('-inf'), served['score'][4])
    self.assertEqual([0, 0], [served['start_position'][4], served['end_position'][4]])


def _stub_span_labeler(start_token, end_token, cls_logit=0.0):
  """A span labeler whose logits are 10 at one token id (start) / another (end), else 0.

  `cls_logit` is added at [CLS] to both, the SQuAD 2.0 "no answer" score.
  """
  ids = tf_keras.Input(shape=(None,), dtype=tf.int32, name='input_word_ids')
  inputs = dict(input_word_ids=ids,
                input_mask=tf_keras.Input(shape=(None,), dtype=tf.int32, name='input_mask'),
                input_type_ids=tf_keras.Input(shape=(None,), dtype=tf.int32,
                                              name='input_type_ids'))

  def logits(target):
    return tf_keras.layers.Lambda(lambda x: (
        10.0 * tf.cast(tf.equal(x, utils.VOCAB.tokens.index(target)), tf.float32) +
        cls_logit * tf.cast(tf.equal(x, utils.VOCAB.cls_id), tf.float32)))(ids)

  return tf_keras.Model(inputs, [logits(start_token), logits(end_token)])


class TextQuestionAnsweringSpanTest(tf.test.TestCase):
  """Span decoding against hand-computed answers, with a stub model choosing the tokens."""

  def _answer(self, questions, contexts, model=None, **kwargs):
    kwargs = dict(dict(vocab_file='sample:vocab', lower_case=True, seq_length=_SEQ_LENGTH,
                       max_query_length=_MAX_QUERY_LENGTH, max_answer_length=30), **kwargs)
    # 'Ç' lowercases to 'c' and 'naïve' ends in the piece '##ive'.
    module = export_modules.TextQuestionAnswering(
        model or _stub_span_labeler('c', '##ive'), **kwargs)
    out = module.serve_text(tf.constant(questions), tf.constant(contexts))
    return ([t.decode() for t in out['answer_text'].numpy()], out['answer_start'].numpy(),
            out['answer_end'].numpy())

  def test_offsets_point_into_the_original_text(self):
    # Row 1 also has 'c' in the question, which must not start the span; row 2 has '##ive'
    # before the 'c', which cannot end it.
    texts, starts, ends = self._answer(
        ['c?', 'naïve'], ['Ça va? 東京 — naïve', 'naïve Ça va? naïve!'])
    self.assertEqual(['Ça va? 東京 — naïve', 'Ça va? naïve'], texts)
    self.assertAllEqual([0, 6], starts)
    self.assertAllEqual([17, 18], ends)

  def test_max_answer_length(self):
    # 'c' ... '##ive' is 11 tokens; with at most 10 the best span is the start token alone.
    for max_answer_length, expected in ((11, 'Ça va? 東京 — naïve'), (10, 'Ç')):
      texts, starts, ends = self._answer(['c?'], ['Ça va? 東京 — naïve'],
                                         max_answer_length=max_answer_length)
      self.assertEqual([expected], texts)
      self.assertAllEqual([[0], [len(expected)]], [starts, ends])

  def test_squad_v2_answers_nothing_when_no_answer_scores_higher(self):
    # Best span 10 + 10 = 20 against a [CLS] score of 15 + 15 = 30.
    model = _stub_span_labeler('c', '##ive', cls_logit=15.0)
    for threshold, expected in ((0.0, ''), (15.0, 'Ça va naïve')):
      texts, _, _ = self._answer(['q'], ['Ça va naïve'], model=model,
                                 version_2_with_negative=True,
                                 null_score_diff_threshold=threshold)
      self.assertEqual([expected], texts, msg=threshold)

  def test_module_rejects_bad_lengths(self):
    for override, message in ((dict(max_query_length=_SEQ_LENGTH - 3), 'max_query_length=29'),
                              (dict(max_answer_length=0), 'max_answer_length=0'),
                              (dict(seq_length=4), 'seq_length=4')):
      with self.assertRaisesRegex(ValueError, message):
        self._answer(['q'], ['c'], **override)


if __name__ == '__main__':
  tf.test.main()
