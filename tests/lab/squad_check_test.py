"""The SQuAD check's split, its two model-free answers and their scores, on a tiny SQuAD file."""

import json
import os

import tensorflow as tf

from teams_lab import squad_check


def _article(title, context, questions):
  """One article of one paragraph; questions are (question, answer text)."""
  return dict(title=title, paragraphs=[dict(context=context, qas=[
      dict(id=f'{title}-{i}', question=q,
           answers=[dict(text=a, answer_start=context.index(a))])
      for i, (q, a) in enumerate(questions)])])


_CAPITALS = _article(
    'capitals', 'Tokyo is the capital of Japan. Paris is the capital of France! Rome is old.',
    [('Which city is the capital of France?', 'Paris'),
     ('What is the capital of Japan?', 'Tokyo is the capital of Japan.')])
_RIVERS = _article('rivers', 'The Nile flows north. It is 6,650 km long.',
                   [('How long is the Nile?', '6,650 km')])
_RIVERS['paragraphs'][0]['qas'][0]['answers'].append(dict(text='6,650', answer_start=28))


class SquadCheckTest(tf.test.TestCase):

  def test_split_is_seeded_disjoint_and_in_file_order(self):
    articles = [dict(title=str(i), paragraphs=[]) for i in range(10)]
    train, held_out = squad_check.split_articles(articles, 3, seed=1)
    again_train, again_held_out = squad_check.split_articles(articles, 3, seed=1)
    self.assertEqual((train, held_out), (again_train, again_held_out))
    self.assertLen(held_out, 3)
    self.assertCountEqual(articles, train + held_out)
    self.assertEqual(held_out, sorted(held_out, key=lambda a: int(a['title'])))
    self.assertNotEqual(held_out, squad_check.split_articles(articles, 3, seed=2)[1])
    with self.assertRaisesRegex(ValueError, 'held_out=10 must leave articles'):
      squad_check.split_articles(articles, 10, seed=1)

  def test_sentences_end_at_punctuation_before_a_capital_or_digit(self):
    self.assertEqual(['Tokyo is the capital of Japan.', 'Paris is the capital of France!',
                      'Rome is old.'], squad_check.sentences(_CAPITALS['paragraphs'][0]['context']))
    self.assertEqual(['It was 6.5 km.'], squad_check.sentences('It was 6.5 km.'))

  def test_model_free_answers_and_their_official_scores(self):
    articles = [_CAPITALS, _RIVERS]
    first = squad_check.first_sentence_answers(articles)
    self.assertEqual({'capitals-0': 'Tokyo is the capital of Japan.',
                      'capitals-1': 'Tokyo is the capital of Japan.',
                      'rivers-0': 'The Nile flows north.'}, first)
    overlap = squad_check.best_overlap_answers(articles)
    # 'capital', 'france' and 'city' -> the France sentence; 'long', 'nile' -> ties go first.
    self.assertEqual('Paris is the capital of France!', overlap['capitals-0'])
    self.assertEqual('The Nile flows north.', overlap['rivers-0'])
    # The official scorer: exact on one question of three for both; the France sentence holds
    # 1 of its 5 normalized words' worth of the gold 'Paris' (F1 1/3).
    self.assertEqual(dict(exact_match=100 / 3, f1=100 / 3), squad_check.score(articles, first))
    scores = squad_check.score(articles, overlap)
    self.assertAlmostEqual(100 / 3, scores['exact_match'])
    self.assertAlmostEqual(100 * (1 / 3 + 1) / 3, scores['f1'])

  def test_split_files_hold_squad_json(self):
    dev = os.path.join(self.get_temp_dir(), 'dev.json')
    with open(dev, 'w') as f:
      json.dump(dict(version='1.1', data=[_CAPITALS, _RIVERS]), f)
    paths = squad_check.write_split(dev, self.get_temp_dir(), held_out=1, seed=1)
    with open(paths['train']) as f, open(paths['held_out']) as g:
      train, held_out = json.load(f), json.load(g)
    self.assertEqual('1.1', held_out['version'])
    # Training keeps the first reference answer of each question, scoring all of them.
    self.assertEqual(['rivers'], [a['title'] for a in train['data']])
    self.assertEqual([{'text': '6,650 km', 'answer_start': 28}],
                     train['data'][0]['paragraphs'][0]['qas'][0]['answers'])
    self.assertEqual(3, squad_check.num_questions(train['data'] + held_out['data']))


if __name__ == '__main__':
  tf.test.main()
