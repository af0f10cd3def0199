"""BLiMP minimal pairs: reading, strict accuracy, summaries, the unigram floor, a run's scorer."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

from teams_tf.data import tokenization
from teams_tf.serving import loaders
from teams_tf.serving import minimal_pairs
from tests.serving import export_testing_utils as utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def _write_blimp(directory, paradigms, paper=True):
  """`paradigms`: {uid: (phenomenon, [(good, bad), ...])} as BLiMP's files, plus its summary."""
  os.makedirs(directory, exist_ok=True)
  for uid, (phenomenon, pairs) in paradigms.items():
    with open(os.path.join(directory, f'{uid}.jsonl'), 'w') as f:
      for i, (good, bad) in enumerate(pairs):
        f.write(json.dumps(dict(sentence_good=good, sentence_bad=bad, field='syntax',
                                linguistics_term=phenomenon, UID=uid, pairID=str(i))) + '\n')
  if paper:
    with open(os.path.join(directory, minimal_pairs.PAPER_RESULTS), 'w') as f:
      for k, uid in enumerate(paradigms):
        f.write(json.dumps(dict(UID=uid, linguistics_term='x', ngram=0.5 + 0.1 * k, lstm=0.6,
                                txl=0.7, gpt2=0.9)) + '\n')
      f.write(json.dumps(dict(linguistics_term='overall', ngram=0.61)) + '\n')


_PARADIGMS = {
    'agreement_1': ('agreement', [('the cat runs .', 'the cat run .'),
                                  ('the cats run .', 'the cats runs .'),
                                  ('a dog is here .', 'a dog are here .')]),
    'agreement_2': ('agreement', [('dogs are .', 'dogs is .')]),
    'island': ('island_effects', [('who ran ?', 'who ran who ?'), ('what fell ?', 'fell what ?')]),
}


class MinimalPairsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.blimp = os.path.join(self.get_temp_dir(), 'blimp')
    _write_blimp(self.blimp, _PARADIGMS)

  def test_paradigms_in_uid_order_without_the_papers_file(self):
    paradigms = minimal_pairs.read_paradigms(self.blimp)
    self.assertEqual(['agreement_1', 'agreement_2', 'island'], [p.uid for p in paradigms])
    self.assertEqual(('the cat runs .', 'the cats run .', 'a dog is here .'), paradigms[0].good)
    self.assertEqual('island_effects', paradigms[2].phenomenon)
    self.assertLen(minimal_pairs.read_paradigms(self.blimp, max_pairs=2)[0].good, 2)

  def test_a_pair_is_right_only_when_the_good_sentence_scores_strictly_higher(self):
    scores = {'the cat runs .': 2.0, 'the cat run .': 1.0,  # right
              'the cats run .': 1.0, 'the cats runs .': 1.0,  # a tie: wrong
              'a dog is here .': 0.0, 'a dog are here .': 3.0,  # wrong
              'dogs are .': 5.0, 'dogs is .': 4.0,
              'who ran ?': 1.0, 'who ran who ?': 0.0, 'what fell ?': 0.0, 'fell what ?': 1.0}
    paradigms = minimal_pairs.read_paradigms(self.blimp)
    outcomes = minimal_pairs.pair_outcomes(lambda texts: np.array([scores[t] for t in texts]),
                                           paradigms, batch_size=5, log=lambda _: None)
    self.assertEqual({'agreement_1': '100', 'agreement_2': '1', 'island': '10'},
                     minimal_pairs.outcome_bits(outcomes))
    by_uid = minimal_pairs.accuracies(outcomes)
    self.assertEqual({'agreement_1': 1 / 3, 'agreement_2': 1.0, 'island': 0.5}, by_uid)
    summary = minimal_pairs.summarize(paradigms, by_uid)
    # The mean is over paradigms, not pairs; a phenomenon is the mean of its paradigms.
    self.assertAlmostEqual((1 / 3 + 1 + 0.5) / 3, summary['mean'])
    self.assertEqual({'agreement': (1 / 3 + 1) / 2, 'island_effects': 0.5},
                     summary['phenomena'])

  def test_the_papers_results_on_these_paradigms(self):
    paper = minimal_pairs.paper_results(self.blimp, minimal_pairs.read_paradigms(self.blimp))
    self.assertEqual({'agreement_1': 0.5, 'agreement_2': 0.6, 'island': 0.7}, paper['ngram'])
    self.assertEqual(set(minimal_pairs.PAPER_MODELS), set(paper))

  def test_bad_files_name_the_line(self):
    with open(os.path.join(self.blimp, 'island.jsonl'), 'a') as f:
      f.write('{"sentence_good": "x"}\n')
    with self.assertRaisesRegex(ValueError, r'island\.jsonl:3 is not a BLiMP pair'):
      minimal_pairs.read_paradigms(self.blimp)
    with self.assertRaisesRegex(ValueError, 'holds no <paradigm>.jsonl'):
      minimal_pairs.read_paradigms(self.get_temp_dir())

  def test_unigram_scorer_is_add_one_token_frequency(self):
    vocab_path = os.path.join(self.get_temp_dir(), 'vocab.txt')
    with open(vocab_path, 'w') as f:
      f.write('\n'.join(list(tokenization.SPECIAL_TOKENS) + ['the', 'cat', 'dog', '##s']) + '\n')
    corpus = os.path.join(self.get_temp_dir(), 'corpus.txt')
    with open(corpus, 'w') as f:
      f.write('the cat\nthe cats\n\nthe dog\n')
    vocab = tokenization.load_vocabulary(vocab_path)
    scorer = minimal_pairs.UnigramScorer(vocab, True, [corpus], log=lambda _: None)
    # Tokens: the x3, cat x2, ##s x1, dog x1 = 7 of a 9-token vocabulary.
    log_p = {token: np.log((count + 1) / (7 + 9))
             for token, count in (('the', 3), ('cat', 2), ('dog', 1), ('##s', 1))}
    self.assertAllClose([log_p['the'] + log_p['dog'], log_p['cat'] + log_p['##s']],
                        scorer(['The dog', 'cats']))


class RunScorerTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tempfile.mkdtemp()
    cls.run_dir = os.path.join(cls.work_dir, 'teams')
    utils.write_pretraining_run(cls.run_dir, utils.copy_sample_vocab(cls.work_dir),
                                seq_length=24)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.work_dir)
    super().tearDownClass()

  def test_a_teams_run_scores_with_its_generator_and_its_kept_encoder(self):
    texts = ['The cat sat on the mat.', 'Mat the on sat cat the.']
    scores = {}
    for method in ('masked_lm', 'rtd', 'mws'):
      scorer, vocab, lower_case, seq_length = loaders.load_sentence_scorer(self.run_dir, method)
      self.assertEqual(24, seq_length)
      scores[method] = minimal_pairs.text_scorer(scorer, vocab, lower_case, seq_length)(texts)
      self.assertTrue(np.all(scores[method] < 0), method)
    random, vocab, lower_case, seq_length = loaders.load_sentence_scorer(
        self.run_dir, 'rtd', random_init=True)
    self.assertNotAllClose(
        scores['rtd'], minimal_pairs.text_scorer(random, vocab, lower_case, seq_length)(texts))

  def test_seeded_random_init_is_the_same_weights_every_time(self):
    # What `teams-minimal-pairs --random_init --seed=k` relies on for a random-init row that
    # every method, and a rerun, scores with the same weights.
    texts = ['The cat sat on the mat.', 'Mat the on sat cat the.']
    scores = []
    for _ in range(2):
      tf_keras.utils.set_random_seed(3)
      scorer, vocab, lower_case, seq_length = loaders.load_sentence_scorer(
          self.run_dir, 'masked_lm', random_init=True)
      scores.append(minimal_pairs.text_scorer(scorer, vocab, lower_case, seq_length)(texts))
    self.assertAllEqual(scores[0], scores[1])

  def test_a_method_the_run_lacks_is_one_clear_error(self):
    with self.assertRaisesRegex(ValueError, r"has no method 'self_critic'; use some of "
                                r'masked_lm, masked_lm_word_l2r, mws, rtd'):
      loaders.load_sentence_scorer(self.run_dir, 'self_critic')

  def test_command_writes_every_method_and_the_papers_rows(self):
    blimp = os.path.join(self.work_dir, 'blimp')
    _write_blimp(blimp, _PARADIGMS)
    output = os.path.join(self.work_dir, 'blimp.json')
    result = subprocess.run(
        [sys.executable, os.path.join(_ROOT, 'tools', 'minimal_pairs.py'),
         f'--model_dir={self.run_dir}', f'--blimp_dir={blimp}', f'--output={output}',
         '--methods=masked_lm_word_l2r,rtd'], cwd=_ROOT, capture_output=True, text=True,
        timeout=300, check=False)
    self.assertEqual(0, result.returncode, result.stderr[-3000:])
    with open(output) as f:
      written = json.load(f)
    self.assertEqual(['masked_lm_word_l2r', 'rtd'], sorted(written['methods']))
    self.assertEqual(6, written['num_pairs'])
    self.assertEqual({'agreement_1', 'agreement_2', 'island'},
                     set(written['methods']['rtd']['paradigms']))
    self.assertEqual([3, 1, 2], [len(written['methods']['rtd']['pairs'][uid])
                                 for uid in ('agreement_1', 'agreement_2', 'island')])
    self.assertIn('5-gram (BLiMP paper): 60.0', result.stdout)
    self.assertNotIn(' configs: {', result.stderr)


if __name__ == '__main__':
  tf.test.main()
