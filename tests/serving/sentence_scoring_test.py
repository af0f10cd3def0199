"""Every sentence-scoring method against a NumPy computation over one sentence at a time."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.data import tokenization
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import mlm_pretrainer
from teams_tf.models import script_pretrainer
from teams_tf.models import taco_pretrainer
from teams_tf.models import teams_pretrainer
from teams_tf.serving import sentence_scoring
from tests import testing_utils

_T = 12
# Ids 0-4 special; 90-99 are continuation pieces ('##..').
_VOCAB = tokenization.Vocabulary(
    path='', pad_id=0, unk_id=1, cls_id=2, sep_id=3, mask_id=4,
    tokens=tuple(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + [f'w{i}' for i in range(5, 90)]
                 + [f'##p{i}' for i in range(90, 100)]))
# Sentences of 6, 9 and 4 tokens; sentence 1 has a 3-piece word (40 ##91 ##92) and a 2-piece one.
_SENTENCES = [[7, 8, 9, 10, 11, 12], [40, 91, 92, 13, 50, 95, 14, 15, 16], [20, 21, 93, 22]]


def _packed():
  word_ids = np.zeros([len(_SENTENCES), _T], np.int32)
  for b, tokens in enumerate(_SENTENCES):
    word_ids[b, :len(tokens) + 2] = [2] + tokens + [3]
  input_mask = (word_ids > 0).astype(np.int32)
  weights = (input_mask * ~np.isin(word_ids, [2, 3])).astype(np.float32)
  return word_ids, input_mask, weights


def _log_softmax(logits):
  shifted = logits.astype(np.float64) - logits.max(-1, keepdims=True)
  return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _log_sigmoid(x):
  return -np.logaddexp(0.0, -np.asarray(x, np.float64))


def _perturbed(model):
  """Weights away from their initial values, so every head's bias and norm matter."""
  for variable in model.trainable_variables:
    variable.assign_add(tf.random.normal(variable.shape, stddev=0.1, seed=7))
  return model


def _built(kind):
  if kind == 'teams':
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=1)
  elif kind == 'bert':
    model = mlm_pretrainer.build_mlm_pretrainer(testing_utils.tiny_mlm_config())
  elif kind == 'script':
    model = script_pretrainer.build_script_pretrainer(testing_utils.tiny_script_config())
  elif kind == 'taco':
    model = taco_pretrainer.build_taco_pretrainer(testing_utils.tiny_taco_config())
  else:
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(testing_utils.tiny_coco_lm_config(),
                                                        seed=1)
  model(testing_utils.pretraining_batch())
  return _perturbed(model)


def _encoder_inputs(ids, mask):
  return dict(input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
              input_type_ids=tf.zeros_like(ids))


def _sequence(network, ids, mask):
  return network(_encoder_inputs(ids, mask), training=False)['sequence_output']


def _masked_reference(network, head, word_l2r):
  """Σ_t log P(x_t | copy with t, and word_l2r the later pieces of its word, masked)."""
  word_ids, input_mask, weights = _packed()
  scores = []
  for b in range(len(word_ids)):
    total = 0.0
    for t in np.flatnonzero(weights[b]):
      copy = word_ids[b:b + 1].copy()
      copy[0, t] = 4
      if word_l2r:
        u = t + 1
        while u < _T and copy[0, u] >= 90:  # The word's later pieces.
          copy[0, u] = 4
          u += 1
      logits = head(_sequence(network, copy, input_mask[b:b + 1]), tf.constant([[t]]))
      total += _log_softmax(logits.numpy()[0, 0])[word_ids[b, t]]
    scores.append(total)
  return np.array(scores)


def _one_pass_reference(per_token):
  """Σ_t of [1, T] per-token log-probabilities computed one sentence at a time."""
  word_ids, input_mask, weights = _packed()
  return np.array([(per_token(word_ids[b:b + 1], input_mask[b:b + 1])[0] * weights[b]).sum()
                   for b in range(len(word_ids))])


class SentenceScoringTest(tf.test.TestCase, parameterized.TestCase):

  def _scores(self, model, method, batch_size=4):
    scorer = sentence_scoring.SentenceScorer(
        sentence_scoring.methods(model)[method], _VOCAB, batch_size=batch_size)
    return scorer(*_packed())

  @parameterized.product(kind=['bert', 'teams', 'script', 'taco', 'coco_lm'],
                         method=['masked_lm', 'masked_lm_word_l2r'])
  def test_masked_lm_pll_matches_one_copy_at_a_time(self, kind, method):
    model = _built(kind)
    network = (model.encoder_network if kind in ('bert', 'script', 'taco')
               else model.generator_network)
    expected = _masked_reference(network, model.masked_lm, method == 'masked_lm_word_l2r')
    # Batches of 4 rows split sentences across forward passes.
    self.assertAllClose(expected, self._scores(model, method), atol=1e-4, rtol=1e-5)

  def test_word_l2r_masks_the_later_pieces_of_the_word_only(self):
    word_ids, _, weights = _packed()
    rows, sentence, position, target = sentence_scoring.masked_rows(
        word_ids[1:2], weights[1:2], 4, np.isin(word_ids[1:2], range(90, 100)))
    # [CLS] 40 ##91 ##92 13 50 ##95 14 15 16 [SEP]: scoring 40 masks its word; ##91 masks ##92.
    self.assertEqual([1, 2, 3, 4, 5, 6, 7, 8, 9], position.tolist())
    self.assertEqual([2, 4, 4, 4, 13, 50, 95, 14, 15, 16, 3, 0], rows[0].tolist())
    self.assertEqual([2, 40, 4, 4, 13, 50, 95, 14, 15, 16, 3, 0], rows[1].tolist())
    self.assertEqual([2, 40, 91, 4, 13, 50, 95, 14, 15, 16, 3, 0], rows[2].tolist())
    self.assertEqual([2, 40, 91, 92, 13, 4, 4, 14, 15, 16, 3, 0], rows[4].tolist())
    self.assertEqual(word_ids[1, 1:10].tolist(), target.tolist())
    self.assertEqual([0] * 9, sentence.tolist())

  def test_rtd_is_the_log_probability_of_original_under_the_rtd_head(self):
    model = _built('teams')

    def per_token(ids, mask):
      outputs = model.discriminator_network(_encoder_inputs(ids, mask), training=False)
      hidden = outputs['encoder_outputs'][model.rtd_head_input_layer - 1]
      logits = model.rtd_head(hidden, model.attention_mask(hidden, tf.constant(mask)),
                              training=False)
      return _log_sigmoid(logits.numpy())

    self.assertAllClose(_one_pass_reference(per_token), self._scores(model, 'rtd', 2),
                        atol=1e-4, rtol=1e-5)

  def test_mws_scores_every_vocabulary_token_as_a_candidate(self):
    model = _built('teams')
    head = model.mws_head

    def per_token(ids, mask):
      query = head.layer_norm(head.dense(_sequence(model.discriminator_network, ids, mask)))
      logits = query.numpy()[0] @ head.embedding_table.numpy().T
      return _log_softmax(logits)[np.arange(_T), ids[0]][None]

    self.assertAllClose(_one_pass_reference(per_token), self._scores(model, 'mws', 2),
                        atol=1e-4, rtol=1e-5)

  def test_self_critic_is_scripts_eq_7(self):
    model = _built('script')

    def per_token(ids, mask):
      sequence = _sequence(model.encoder_network, ids, mask)
      return _log_sigmoid(model.masked_lm(sequence).numpy())

    self.assertAllClose(_one_pass_reference(per_token), self._scores(model, 'self_critic', 2),
                        atol=1e-4, rtol=1e-5)

  def test_clm_is_coco_lms_copy_and_correction_on_the_clean_sentence(self):
    model = _built('coco_lm')

    def per_token(ids, mask):
      head = model.clm_head(_sequence(model.discriminator_network, ids, mask))
      p_copy = 1 / (1 + np.exp(-head['copy_logits'].numpy()[0].astype(np.float64)))
      p_vocab = np.exp(_log_softmax(head['clm_logits'].numpy()[0]))[np.arange(_T), ids[0]]
      # Eq. (2): the input token is the original, so copy and correction both give it.
      return np.log(p_copy + (1 - p_copy) * p_vocab)[None]

    self.assertAllClose(_one_pass_reference(per_token), self._scores(model, 'clm', 2),
                        atol=1e-4, rtol=1e-5)

  @parameterized.parameters(('bert', 'masked_lm_word_l2r'), ('teams', 'rtd'))
  def test_xla_gives_the_same_scores(self, kind, method):
    model = _built(kind)
    scores = []
    for jit_compile in (False, True):
      scorer = sentence_scoring.SentenceScorer(sentence_scoring.methods(model)[method], _VOCAB,
                                               batch_size=4, jit_compile=jit_compile)
      scores.append(scorer(*_packed()))
    self.assertAllClose(scores[0], scores[1], atol=1e-4, rtol=1e-5)

  def test_each_pretrainer_offers_its_networks_methods(self):
    expected = {'bert': ['masked_lm', 'masked_lm_word_l2r'],
                'teams': ['masked_lm', 'masked_lm_word_l2r', 'mws', 'rtd'],
                'script': ['masked_lm', 'masked_lm_word_l2r', 'self_critic'],
                'coco_lm': ['clm', 'masked_lm', 'masked_lm_word_l2r']}
    for kind, names in expected.items():
      self.assertEqual(names, sorted(sentence_scoring.methods(_built(kind))), kind)


if __name__ == '__main__':
  tf.test.main()
