"""Tests for teams_tf.preprocessing.sequence_packing: sentence packing within documents, segments,
long sentences."""

import os

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.data import corpus
from teams_tf.data import tokenization
from teams_tf.preprocessing import sequence_packing

_PAD, _UNK, _CLS, _SEP = 0, 1, 2, 3


def _vocab(directory, words):
  """A vocabulary of the special tokens, '.', and `words` (ids 6, 7, ...)."""
  path = os.path.join(directory, 'vocab.txt')
  with open(path, 'w', encoding='utf-8') as f:
    f.write('\n'.join(list(tokenization.SPECIAL_TOKENS) + ['.'] + list(words)) + '\n')
  return tokenization.load_vocabulary(path)


def _document(*paragraphs):
  return corpus.Document('doc.txt', tuple(range(1, len(paragraphs) + 1)), tuple(paragraphs))


def _pack(vocab, documents, seq_length=16, num_segments=2, seed=0):
  packer = sequence_packing.SequencePacker(vocab, True, seq_length, num_segments, seed)
  stats = sequence_packing.PackingStats()
  return packer.pack(documents, 'doc.txt', 0, stats), stats


def _segments(row, segment_ids, length):
  """Checks the [CLS] A [SEP] (B [SEP]) layout of one row and returns the segments' token lists."""
  assert row[0] == _CLS and row[length - 1] == _SEP and np.all(row[length:] == _PAD)
  seps = [i for i in range(length) if row[i] == _SEP]
  bounds = [0] + seps
  segments = [list(row[bounds[i] + 1:bounds[i + 1]]) for i in range(len(seps))]
  expected_ids = [0] * (seps[0] + 1) + [1] * (length - seps[0] - 1) + [0] * (len(row) - length)
  assert list(segment_ids) == expected_ids, (list(segment_ids), expected_ids)
  return segments


class SequencePackerTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.words = [f'w{i}' for i in range(60)]
    self.vocab = _vocab(self.get_temp_dir(), self.words)

  def _sentence(self, first, count):
    """`count` distinct words from w<first> on, then '.': count + 1 tokens.

    The words are written 'W<i>' (lowercased by the tokenizer) so that each next sentence starts
    with a capital, as the sentence splitter requires.
    """
    return ' '.join(self.words[first:first + count]).upper() + '.'

  def test_sequences_never_span_documents(self):
    # Each document uses its own words; every sequence's tokens must come from one document.
    documents = [_document(' '.join(self._sentence(20 * d + 4 * s, 4) for s in range(4)))
                 for d in range(3)]
    packed, stats = _pack(self.vocab, documents)
    document_of_id = {6 + w: w // 20 for w in range(60)}
    for row, length in zip(packed.input_ids, packed.lengths):
      owners = {document_of_id[t] for t in row[:length] if t in document_of_id}
      self.assertLen(owners, 1)
    self.assertEqual((stats.documents, stats.sentences, stats.tokens), (3, 12, 60))

  def test_layout_segment_ids_and_lengths(self):
    text = ' '.join(self._sentence(4 * s, 4) for s in range(7))  # 7 sentences of 5 tokens.
    packed, stats = _pack(self.vocab, [_document(text)], seq_length=16)
    # Budget 13 = 16 - [CLS] - 2 [SEP]: two 5-token sentences per chunk, a last one alone.
    self.assertEqual(packed.input_ids.shape, (4, 16))
    self.assertEqual(packed.input_ids.dtype, np.int32)
    self.assertEqual(list(packed.lengths), [13, 13, 13, 7])
    tokens = []
    for row, segment_ids, length in zip(packed.input_ids, packed.segment_ids, packed.lengths):
      segments = _segments(row, segment_ids, length)
      self.assertLen(segments, 2 if length == 13 else 1)
      tokens.extend(t for segment in segments for t in segment)
    # All tokens, in order, none lost.
    self.assertEqual(tokens, [6 + w if i % 5 < 4 else 5
                              for i, w in enumerate(np.repeat(np.arange(7) * 4, 5) +
                                                    np.tile([0, 1, 2, 3, 0], 7))])
    self.assertEqual((stats.sequences, stats.two_segment_sequences, stats.padding_tokens),
                     (4, 3, 3 * 3 + 9))

  def test_split_point_is_a_random_sentence_boundary(self):
    text = ' '.join(self._sentence(s, 1) for s in range(5))  # 5 sentences of 2 tokens.
    # Each document draws its split point from its own seed (seed, source, document index).
    packed, _ = _pack(self.vocab, [_document(text)] * 30, seq_length=16)
    first_segment_lengths = set()
    for row, segment_ids, length in zip(packed.input_ids, packed.segment_ids, packed.lengths):
      segments = _segments(row, segment_ids, length)
      self.assertLen(segments, 2)
      first_segment_lengths.add(len(segments[0]))
    self.assertEqual(first_segment_lengths, {2, 4, 6, 8})

  def test_one_segment(self):
    text = ' '.join(self._sentence(4 * s, 4) for s in range(3))
    packed, stats = _pack(self.vocab, [_document(text)], seq_length=16, num_segments=1)
    # Budget 14: two 5-token sentences, then one.
    self.assertEqual(list(packed.lengths), [12, 7])
    self.assertAllEqual(packed.segment_ids, np.zeros_like(packed.segment_ids))
    self.assertEqual(stats.two_segment_sequences, 0)

  def test_long_sentence_is_split_into_budget_pieces(self):
    text = self._sentence(0, 30)  # 31 tokens, budget 13.
    packed, stats = _pack(self.vocab, [_document('Short.', text)], seq_length=16)
    self.assertTrue(np.all(packed.lengths <= 16))
    self.assertEqual((stats.long_sentences, stats.long_sentence_pieces), (1, 3))
    self.assertEqual(stats.tokens, sum(length - 2 - (segment_ids.max())
                                       for length, segment_ids in zip(packed.lengths,
                                                                      packed.segment_ids)))
    self.assertLen(stats.messages, 1)
    self.assertStartsWith(stats.messages[0], 'doc.txt, line 2: sentence of 31 tokens')

  def test_short_document_is_padded_and_empty_document_skipped(self):
    packed, stats = _pack(self.vocab, [_document('w1 w2'), _document('\u200b')])
    self.assertAllEqual(packed.input_ids, [[_CLS, 7, 8, _SEP] + [_PAD] * 12])
    self.assertEqual((stats.documents, stats.empty_documents), (1, 1))

  def test_unknown_words_are_counted(self):
    _, stats = _pack(self.vocab, [_document('w1 zebra w2 zebra.')])
    self.assertEqual((stats.tokens, stats.unk_tokens), (5, 2))

  def test_same_seed_same_sequences_independent_of_batching(self):
    documents = [_document(' '.join(self._sentence(s, 2) for s in range(9))) for _ in range(5)]
    packed, _ = _pack(self.vocab, documents, seed=7)
    again, _ = _pack(self.vocab, documents, seed=7)
    self.assertAllEqual(packed.input_ids, again.input_ids)
    self.assertAllEqual(packed.segment_ids, again.segment_ids)

  @parameterized.named_parameters(('num_segments', 3, 16), ('too_short', 2, 3))
  def test_invalid_arguments(self, num_segments, seq_length):
    with self.assertRaises(ValueError):
      sequence_packing.SequencePacker(self.vocab, True, seq_length, num_segments, 0)

  def test_concatenate(self):
    packed, _ = _pack(self.vocab, [_document('w1.'), _document('w2 w3.')])
    empty = sequence_packing.PackedSequences.concatenate([], 16)
    both = sequence_packing.PackedSequences.concatenate([packed, empty, packed], 16)
    self.assertLen(empty, 0)
    self.assertLen(both, 4)
    self.assertAllEqual(both.lengths, [4, 5, 4, 5])


if __name__ == '__main__':
  tf.test.main()
