"""Tokenizes documents and packs consecutive sentences into `[CLS] A [SEP] B [SEP]` sequences.

Packing follows the sentence-level scheme of the BERT and ELECTRA data builders, without next-
sentence prediction: sentences (`corpus.split_sentences`) of ONE document are appended to a chunk
while its tokens fit the budget `T - 1 - num_segments` ([CLS] plus one [SEP] per segment); the chunk
is emitted when the next sentence does not fit, and at the end of the document, so a sequence never
spans two documents and short documents give short, padded sequences. With two segments, a chunk of
at least two sentences is split at a uniformly random sentence boundary into A and B (segment ids 0
for `[CLS] A [SEP]`, 1 for `B [SEP]`); a one-sentence chunk, or any chunk with `num_segments=1`, is
`[CLS] A [SEP]`. A sentence longer than the budget is cut into budget-sized pieces that pack like
sentences, so no token is dropped. Tokenization is `tokenization.build_tokenizer`, the tokenizer of
the dynamic path, so both paths see the same ids.
"""

import dataclasses
from typing import Iterable

import numpy as np
import tensorflow as tf

from teams_tf.data import corpus
from teams_tf.data import tokenization

# Sentences per tokenizer call; only throughput depends on it, never the output.
_SENTENCES_PER_CALL = 4096
# Long-sentence messages named per source; the counters hold the totals.
_MESSAGES_PER_SOURCE = 1


@dataclasses.dataclass
class PackingStats:
  """Counters of tokenization and packing; `merge` adds another worker's counts.

  Attributes:
    documents: documents that gave at least one sequence.
    empty_documents: documents whose text tokenized to no token (skipped).
    sentences: non-empty sentences.
    tokens: WordPiece tokens of the text ([CLS]/[SEP]/[PAD] excluded).
    unk_tokens: how many of `tokens` are [UNK].
    sequences: packed sequences.
    two_segment_sequences: sequences with a B segment.
    padding_tokens: [PAD] positions over all sequences.
    long_sentences: sentences longer than the budget, cut into pieces.
    long_sentence_pieces: the pieces they were cut into.
    messages: one line per long sentence (capped per source), naming the file and line.
  """
  documents: int = 0
  empty_documents: int = 0
  sentences: int = 0
  tokens: int = 0
  unk_tokens: int = 0
  sequences: int = 0
  two_segment_sequences: int = 0
  padding_tokens: int = 0
  long_sentences: int = 0
  long_sentence_pieces: int = 0
  messages: list[str] = dataclasses.field(default_factory=list)

  def merge(self, other: 'PackingStats') -> None:
    """Adds `other`'s counters and appends its messages."""
    for field in dataclasses.fields(self):
      if field.name == 'messages':
        self.messages.extend(other.messages)
      else:
        setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


@dataclasses.dataclass
class PackedSequences:
  """N packed sequences of length T.

  Attributes:
    input_ids: [N, T] int32, `[CLS] A [SEP] (B [SEP])` then `[PAD]`.
    segment_ids: [N, T] int8, 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 0 for padding.
    lengths: [N] int32, the number of non-padding tokens; the input mask is `range(T) < length`.
  """
  input_ids: np.ndarray
  segment_ids: np.ndarray
  lengths: np.ndarray

  def __len__(self) -> int:
    return len(self.lengths)

  @classmethod
  def concatenate(cls, parts: list['PackedSequences'], seq_length: int) -> 'PackedSequences':
    """Stacks `parts` in order (an empty list gives N = 0)."""
    if not parts:
      return cls(np.zeros([0, seq_length], np.int32), np.zeros([0, seq_length], np.int8),
                 np.zeros([0], np.int32))
    return cls(np.concatenate([p.input_ids for p in parts]),
               np.concatenate([p.segment_ids for p in parts]),
               np.concatenate([p.lengths for p in parts]))


class SequencePacker:
  """Tokenizes the documents of one source and packs them (see the module docstring)."""

  def __init__(self, vocab: tokenization.Vocabulary, lower_case: bool, seq_length: int,
               num_segments: int, seed: int):
    """Builds the tokenizer.

    Args:
      vocab: the WordPiece vocabulary.
      lower_case: the tokenizer setting the vocabulary was learned with.
      seq_length: T.
      num_segments: 1 (`[CLS] A [SEP]`) or 2 (`[CLS] A [SEP] B [SEP]` when a chunk has >= 2
        sentences).
      seed: with the source and document index, seeds each document's A/B split points.

    Raises:
      ValueError: `num_segments` not in {1, 2}, or `seq_length` too short to hold a token.
    """
    if num_segments not in (1, 2):
      raise ValueError(f'num_segments={num_segments} must be 1 or 2.')
    if seq_length < 2 + num_segments:
      raise ValueError(f'seq_length={seq_length} must be >= {2 + num_segments} to hold [CLS], '
                       f'{num_segments} [SEP] and at least one token.')
    self._vocab = vocab
    self._seq_length = seq_length
    self._num_segments = num_segments
    self._budget = seq_length - 1 - num_segments
    self._seed = seed
    tokenizer = tokenization.build_tokenizer(vocab, lower_case=lower_case)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(texts):
      tokens = tokenizer.tokenize(texts).merge_dims(-2, -1)  # [N, tokens] ragged
      return tokens.flat_values, tokens.row_splits

    self._tokenize = tokenize

  def pack(self, documents: Iterable[corpus.Document], source_name: str, source_index: int,
           stats: PackingStats) -> PackedSequences:
    """Packs all `documents` of one source, in order.

    Args:
      documents: the source's documents.
      source_name: the file path or TFDS dataset, for messages.
      source_index: the source's position in the input (file order); with the document's index it
        seeds the document's split points, so the result does not depend on which process runs it.
      stats: updated in place.

    Returns:
      The sequences, in document order.
    """
    rows = []
    pending = []  # (document index, document, [(paragraph index, sentence)])
    num_pending_sentences = 0
    long_before = stats.long_sentences
    for document_index, document in enumerate(documents):
      sentences = [(i, s) for i, paragraph in enumerate(document.paragraphs)
                   for s in corpus.split_sentences(paragraph)]
      pending.append((document_index, document, sentences))
      num_pending_sentences += len(sentences)
      if num_pending_sentences >= _SENTENCES_PER_CALL:
        self._pack_pending(pending, source_index, stats, rows, long_before)
        pending, num_pending_sentences = [], 0
    self._pack_pending(pending, source_index, stats, rows, long_before)
    unnamed = stats.long_sentences - long_before - _MESSAGES_PER_SOURCE
    if unnamed > 0:
      stats.messages.append(f'{source_name}: {unnamed} more long sentences split')
    if not rows:
      return PackedSequences.concatenate([], self._seq_length)
    input_ids, segment_ids, lengths = zip(*rows)
    return PackedSequences(np.stack(input_ids), np.stack(segment_ids), np.array(lengths, np.int32))

  def _pack_pending(self, pending, source_index, stats, rows, long_before):
    """Tokenizes the sentences of `pending` documents in one call and packs each document."""
    texts = [sentence for _, _, sentences in pending for _, sentence in sentences]
    if not texts:
      stats.empty_documents += len(pending)
      return
    values, row_splits = (t.numpy() for t in self._tokenize(tf.constant(texts)))
    stats.unk_tokens += int(np.sum(values == self._vocab.unk_id))
    stats.tokens += len(values)
    offset = 0
    for document_index, document, sentences in pending:
      tokenized = []
      for i, (paragraph_index, _) in enumerate(sentences, start=offset):
        tokens = values[row_splits[i]:row_splits[i + 1]]
        if len(tokens):
          tokenized.append((paragraph_index, tokens))
      offset += len(sentences)
      if not tokenized:
        stats.empty_documents += 1
        continue
      stats.documents += 1
      stats.sentences += len(tokenized)
      pieces = self._cut_long_sentences(document, tokenized, stats, long_before)
      rng = np.random.default_rng([self._seed, source_index, document_index])
      for chunk in self._chunks(pieces):
        rows.append(self._sequence(chunk, rng, stats))

  def _cut_long_sentences(self, document, tokenized, stats, long_before):
    """Cuts sentences longer than the budget into budget-sized pieces; returns all pieces."""
    budget = self._budget
    pieces = []
    for paragraph_index, tokens in tokenized:
      if len(tokens) <= budget:
        pieces.append(tokens)
        continue
      cut = [tokens[start:start + budget] for start in range(0, len(tokens), budget)]
      stats.long_sentences += 1
      stats.long_sentence_pieces += len(cut)
      if stats.long_sentences - long_before <= _MESSAGES_PER_SOURCE:
        stats.messages.append(f'{document.location(paragraph_index)}: sentence of {len(tokens)} '
                              f'tokens is longer than seq_length allows ({budget}); split into '
                              f'{len(cut)} pieces')
      pieces.extend(cut)
    return pieces

  def _chunks(self, pieces):
    """Greedily groups consecutive pieces into chunks of at most `budget` tokens."""
    chunk, chunk_length = [], 0
    for piece in pieces:
      if chunk and chunk_length + len(piece) > self._budget:
        yield chunk
        chunk, chunk_length = [], 0
      chunk.append(piece)
      chunk_length += len(piece)
    if chunk:
      yield chunk

  def _sequence(self, chunk, rng, stats):
    """One `[CLS] A [SEP] (B [SEP]) [PAD]...` row: (input_ids [T], segment_ids [T], length)."""
    vocab = self._vocab
    if self._num_segments == 2 and len(chunk) >= 2:
      # A = chunk[:split], B = chunk[split:], both non-empty.
      split = int(rng.integers(1, len(chunk)))
      segments = [np.concatenate(chunk[:split]), np.concatenate(chunk[split:])]
      stats.two_segment_sequences += 1
    else:
      segments = [np.concatenate(chunk)]
    input_ids = np.full([self._seq_length], vocab.pad_id, np.int32)
    segment_ids = np.zeros([self._seq_length], np.int8)
    input_ids[0] = vocab.cls_id
    position = 1
    for segment_id, tokens in enumerate(segments):
      end = position + len(tokens)
      input_ids[position:end] = tokens
      input_ids[end] = vocab.sep_id
      segment_ids[position:end + 1] = segment_id
      position = end + 1
    stats.sequences += 1
    stats.padding_tokens += self._seq_length - position
    return input_ids, segment_ids, position
