"""Tests for teams_tf.data.tokenization."""

import dataclasses
import os
import re

from absl.testing import parameterized
import tensorflow as tf

from teams_tf.data import tokenization

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# The shared data sit beside the repository (../shared/data), on every developer machine and in CI.
_BERT_VOCAB = os.path.join(_ROOT, '..', 'shared', 'data', 'vocab', 'bert_uncased_vocab.txt')
_SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']


def _skip_without_bert_vocab(test_case):
  if not os.path.exists(_BERT_VOCAB):
    test_case.skipTest(f'the shared BERT vocabulary {_BERT_VOCAB} is not on this machine')


class LoadVocabularyTest(tf.test.TestCase, parameterized.TestCase):

  def _write_vocab(self, lines, name='vocab.txt'):
    path = os.path.join(self.get_temp_dir(), name)
    with open(path, 'w', encoding='utf-8') as f:
      f.write(''.join(line + '\n' for line in lines))
    return path

  def test_sample_vocabulary(self):
    vocab = tokenization.load_vocabulary('sample:vocab')
    self.assertEqual(vocab.size, 3660)
    self.assertEqual(vocab.tokens[:5], tuple(_SPECIALS))
    self.assertEqual(vocab.special_ids, (0, 1, 2, 3, 4))
    self.assertEqual((vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id, vocab.mask_id),
                     (0, 1, 2, 3, 4))
    self.assertTrue(os.path.isabs(vocab.path))

  def test_bert_layout_ids_are_looked_up_by_name(self):
    # BERT's layout: [PAD], 99 [unusedN] placeholders, then [UNK] [CLS] [SEP] [MASK] at 100-103.
    unused = [f'[unused{i}]' for i in range(99)]
    path = self._write_vocab(['[PAD]'] + unused + ['[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the'])
    vocab = tokenization.load_vocabulary(path)
    self.assertEqual(vocab.size, 105)
    self.assertEqual(vocab.special_ids, (0, 100, 101, 102, 103))

  def test_bert_vocabulary_file(self):
    _skip_without_bert_vocab(self)
    vocab = tokenization.load_vocabulary(_BERT_VOCAB)
    self.assertEqual(vocab.size, 30522)
    self.assertEqual(vocab.special_ids, (0, 100, 101, 102, 103))
    self.assertEqual(vocab.mask_id, 103)

  def test_vocabulary_is_frozen(self):
    vocab = tokenization.load_vocabulary('sample:vocab')
    with self.assertRaises(dataclasses.FrozenInstanceError):
      vocab.mask_id = 7

  def test_missing_file(self):
    path = os.path.join(self.get_temp_dir(), 'nope.txt')
    with self.assertRaisesRegex(ValueError, rf"{re.escape(path)}.*does not exist.*sample:vocab"):
      tokenization.load_vocabulary(path)

  def test_empty_file(self):
    path = self._write_vocab([])
    with self.assertRaisesRegex(ValueError, rf'{re.escape(path)}.*is empty'):
      tokenization.load_vocabulary(path)

  def test_missing_special_token_is_named(self):
    path = self._write_vocab(['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'a', 'b'])
    with self.assertRaisesRegex(
        ValueError, rf'{re.escape(path)}.*lacks the special token\(s\) \[MASK\]\..*Add one line'):
      tokenization.load_vocabulary(path)

  def test_duplicate_token_names_token_and_lines(self):
    path = self._write_vocab(_SPECIALS + ['a', 'b', 'a'])
    with self.assertRaisesRegex(ValueError,
                                rf"{re.escape(path)}.*token 'a' twice: line 6 and line 8"):
      tokenization.load_vocabulary(path)

  def test_blank_line_is_rejected(self):
    path = self._write_vocab(_SPECIALS + ['a', '', 'b'])
    with self.assertRaisesRegex(ValueError, rf'{re.escape(path)}.*line 7 is blank'):
      tokenization.load_vocabulary(path)


class BuildTokenizerTest(tf.test.TestCase, parameterized.TestCase):

  def _wordpieces(self, vocab_path, text, lower_case=True):
    vocab = tokenization.load_vocabulary(vocab_path)
    tokenizer = tokenization.build_tokenizer(vocab, lower_case=lower_case)
    ids = tokenizer.tokenize([text])
    self.assertEqual(ids.dtype, tf.int32)
    return [vocab.tokens[i] for i in ids.flat_values.numpy()]

  def test_bert_vocab_known_sentence(self):
    _skip_without_bert_vocab(self)
    self.assertEqual(
        self._wordpieces(_BERT_VOCAB, 'The Anarchists of Alabama, naïve résumé.'),
        ['the', 'anarchist', '##s', 'of', 'alabama', ',', 'naive', 'resume', '.'])

  def test_sample_vocab_known_sentence(self):
    self.assertEqual(
        self._wordpieces('sample:vocab', 'Anarchism in Alabama: hello world!'),
        ['anarchism', 'in', 'alabama', ':', 'he', '##ll', '##o', 'world', '!'])

  def test_character_outside_vocab_is_unknown(self):
    self.assertEqual(self._wordpieces('sample:vocab', 'the 藻 world'), ['the', '[UNK]', 'world'])

  def test_lower_case_false_keeps_case(self):
    _skip_without_bert_vocab(self)
    # The uncased vocabulary has no capital letters, so a cased word cannot be spelled.
    self.assertEqual(self._wordpieces(_BERT_VOCAB, 'Hello world', lower_case=False),
                     ['[UNK]', 'world'])


if __name__ == '__main__':
  tf.test.main()
