"""Tests for teams_tf.preprocessing.vocab_builder: word counting, learning, the sample vocabulary,
TFDS input."""

import os

import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

from teams_tf.data import corpus
from teams_tf.data import tokenization
from teams_tf.preprocessing import vocab_builder

_SENTENCES = ['The quick brown fox jumps over the lazy dog.',
              'A lazy dog, quick as a fox, jumps over the brown fence!',
              'Über café naïve résumé: the quick fox.']


def _count(source, lower_case=True, max_lines=None):
  stats = corpus.CorpusStats()
  return vocab_builder.count_words(source, stats, lower_case, max_lines), stats


class VocabBuilderTest(tf.test.TestCase):

  def _corpus_file(self, lines, name='corpus.txt'):
    path = os.path.join(self.get_temp_dir(), name)
    with open(path, 'w', encoding='utf-8') as f:
      f.write('\n'.join(lines) + '\n')
    return path

  def test_counts_match_bert_vocab_from_dataset(self):
    path = self._corpus_file(_SENTENCES * 20)
    counter, _ = _count(corpus.CorpusSource(input_patterns=path), lower_case=False)
    expected = bert_vocab_from_dataset.bert_vocab_from_dataset(
        tf.data.TextLineDataset(path), vocab_size=200,
        reserved_tokens=list(vocab_builder.RESERVED_TOKENS),
        bert_tokenizer_params={'lower_case': False}, learn_params={'lower_thresh': 2})
    self.assertEqual(vocab_builder.learn_vocabulary(counter.counts(), 200, min_count=2), expected)
    self.assertEqual((counter.num_lines, counter.num_words), (60, 20 * (10 + 15 + 9)))

  def test_special_tokens_first_and_round_trip(self):
    path = self._corpus_file(_SENTENCES * 20)
    counter, _ = _count(corpus.CorpusSource(input_patterns=path))
    tokens = vocab_builder.learn_vocabulary(counter.counts(), 200, min_count=2)
    self.assertEqual(tokens[:5], ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'])
    vocab_path = os.path.join(self.get_temp_dir(), 'vocab.txt')
    vocab_builder.write_vocabulary(tokens, vocab_path)
    vocab = tokenization.load_vocabulary(vocab_path)
    self.assertEqual(vocab.special_ids, (0, 1, 2, 3, 4))
    tokenizer = tokenization.build_tokenizer(vocab, lower_case=True)
    ids = tokenizer.tokenize(_SENTENCES)
    # detokenize: [sentences, words, 1] UTF-8 bytes.
    words = [[b''.join(word) for word in sentence]
             for sentence in tokenizer.detokenize(ids).to_list()]
    self.assertEqual(words[0], [w.encode() for w in
                                'the quick brown fox jumps over the lazy dog .'.split()])
    self.assertEqual(words[2][:4], [b'uber', b'cafe', b'naive', b'resume'])
    self.assertNotIn(vocab.unk_id, ids.flat_values.numpy())

  def test_unknown_token_counts_match_the_tokenizer(self):
    train = self._corpus_file(_SENTENCES * 20)
    counter, _ = _count(corpus.CorpusSource(input_patterns=train))
    tokens = vocab_builder.learn_vocabulary(counter.counts(), 200, min_count=2)
    other = ['Zebras and 漢字 jump, the fox too.', 'x' * 150]
    other_counter, _ = _count(corpus.CorpusSource(input_patterns=self._corpus_file(other, 'o.txt')))
    num_tokens, num_unk = vocab_builder.unknown_token_counts(other_counter.counts(), tokens)
    vocab_path = os.path.join(self.get_temp_dir(), 'vocab.txt')
    vocab_builder.write_vocabulary(tokens, vocab_path)
    vocab = tokenization.load_vocabulary(vocab_path)
    ids = tokenization.build_tokenizer(vocab).tokenize(other).flat_values.numpy()
    self.assertEqual((num_tokens, num_unk), (len(ids), int((ids == vocab.unk_id).sum())))
    self.assertGreater(num_unk, 0)

  def test_max_lines_and_bad_input(self):
    path = self._corpus_file(['One two.', 'Three\x00four.'], name='binary.txt')
    good = self._corpus_file(['One two.', '', 'Three four.', 'Five.'], name='good.txt')
    counter, stats = _count(corpus.CorpusSource(input_patterns=f'{path},{good}'), max_lines=2)
    self.assertEqual((counter.num_lines, stats.binary_files_skipped), (2, 1))
    self.assertEqual(set(counter.counts()), {'one', 'two', 'three', 'four', '.'})

  def test_tfds_input(self):
    def as_dataset(self, *args, **kwargs):
      del self, args, kwargs
      return tf.data.Dataset.from_tensor_slices({'text': _SENTENCES * 10})

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
      counter, stats = _count(corpus.CorpusSource(tfds_name='lm1b', tfds_split='train'))
    self.assertEqual((counter.num_lines, stats.documents), (30, 30))
    tokens = vocab_builder.learn_vocabulary(counter.counts(), 200, min_count=2)
    self.assertEqual(tokens[:5], list(tokenization.SPECIAL_TOKENS))
    self.assertIn('fox', tokens)

  def test_errors(self):
    with self.assertRaisesRegex(ValueError, 'no words'):
      vocab_builder.learn_vocabulary({}, 100)
    with self.assertRaisesRegex(ValueError, 'vocab_size=5 must exceed'):
      vocab_builder.learn_vocabulary({'a': 1}, 5)
    with self.assertRaisesRegex(ValueError, 'min_count=0'):
      vocab_builder.learn_vocabulary({'a': 1}, 100, min_count=0)


if __name__ == '__main__':
  tf.test.main()
