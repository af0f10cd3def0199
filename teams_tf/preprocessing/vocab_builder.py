"""Learns a WordPiece vocabulary with tensorflow-text's learner: `tools/build_vocab.py`'s library.

This is `tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset` split into its two steps so
the tool can report progress while counting: words are split with tensorflow-text's
`BasicTokenizer` (the first stage of the `BertTokenizer` that `tokenization.build_tokenizer` builds)
and counted in reading order (`WordCounter`), then `wordpiece_tokenizer_learner_lib`'s threshold
search picks the word pieces, one logged step at a time (`learn_vocabulary`). With the same lines
and parameters the result is the same list of tokens as `bert_vocab_from_dataset`'s.
"""

import collections
import itertools
import os
from typing import Iterable, Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops import bert_tokenizer
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from teams_tf.data import corpus
from teams_tf.data import tokenization
from teams_tf.utils import atomic_files
from teams_tf.utils import progress

# The reserved tokens, in this order, take ids 0-4.
RESERVED_TOKENS = tokenization.SPECIAL_TOKENS
# tensorflow-text's `learn` default: the lowest word-piece count its threshold search may try.
DEFAULT_MIN_COUNT = 10
# Lines per tokenizer call; only throughput depends on it, never the counts.
_LINES_PER_BATCH = 1024


class WordCounter:
  """Counts the words of lines as the BERT tokenizer splits them, in first-seen order."""

  def __init__(self, lower_case: bool):
    """Builds the word splitter.

    Args:
      lower_case: lowercase, NFD-normalize and strip accents, as `BertTokenizer(lower_case=True)`.
    """
    splitter = bert_tokenizer.BasicTokenizer(lower_case=lower_case)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def split(lines):
      return splitter.tokenize(lines).flat_values  # [num_words] in reading order

    self._split = split
    # Keyed by UTF-8 bytes, as `learner.count_words` counts, so the insertion order matches it.
    self._counts = collections.Counter()
    self.num_lines = 0
    self.num_words = 0

  def add(self, lines: list[str]) -> None:
    """Counts the words of `lines` (a batch; one tokenizer call)."""
    if not lines:
      return
    words = self._split(tf.constant(lines)).numpy()
    self._counts.update(words)
    self.num_lines += len(lines)
    self.num_words += len(words)

  def counts(self) -> dict[str, int]:
    """Word -> count, in first-seen order."""
    return {word.decode('utf-8'): count for word, count in self._counts.items()}


def count_words(source: corpus.CorpusSource, stats: corpus.CorpusStats, lower_case: bool,
                max_lines: Optional[int] = None) -> WordCounter:
  """Counts the words of every non-blank line of `source`, logging progress and input problems.

  Args:
    source: text files (each non-blank line is text; documents do not matter) or TFDS.
    stats: updated in place; its messages are logged as warnings and cleared.
    lower_case: as in `WordCounter`.
    max_lines: stop after this many non-blank lines (None: all).

  Returns:
    The counter, with `num_lines` and `num_words` of what was read.
  """
  counter = WordCounter(lower_case=lower_case)
  total_bytes = sum(tf.io.gfile.stat(path).length for path in source.files())
  meter = progress.ProgressMeter()

  def log_progress():
    fractions = [stats.bytes / total_bytes] if total_bytes else []
    if max_lines:
      fractions.append(counter.num_lines / max_lines)
    logging.info('lines %s (%s lines/s), %s, words %s, %s', f'{counter.num_lines:,}',
                 f'{meter.rate(counter.num_lines):,.0f}', progress.format_bytes(stats.bytes),
                 f'{counter.num_words:,}', meter.timing(max(fractions) if fractions else None))

  def log_messages():
    for message in stats.messages:
      logging.warning('%s', message)
    stats.messages.clear()

  def lines():
    for document in source.read_documents(stats):
      log_messages()
      yield from document.paragraphs

  batch = []
  for line in itertools.islice(lines(), max_lines):  # max_lines None: every line.
    batch.append(line)
    if len(batch) == _LINES_PER_BATCH:
      counter.add(batch)
      batch = []
      if meter.due():
        log_progress()
  counter.add(batch)
  log_messages()  # Problems of files that gave no document.
  log_progress()
  return counter


def learn_vocabulary(word_counts: dict[str, int], vocab_size: int,
                     min_count: int = DEFAULT_MIN_COUNT, log=logging.info) -> list[str]:
  """tensorflow-text's WordPiece `learn`, logging each step of its threshold search.

  The learner binary-searches a minimum word-piece count between `min_count` and the largest word
  count for a vocabulary of at most `vocab_size` tokens (within 5% below it); on a small corpus the
  search can end below `vocab_size` at `min_count` (see teams_tf/data/sample/SOURCE.md). Each
  step is a full learning pass (about 30 s for 170k distinct words), so the search is run here,
  step by step, from the library's own pieces (`learner.learn_with_thresh` and the input
  filters of `learner.learn`, with `learn`'s defaults): same steps, same result, with a progress
  line per step instead of minutes of silence.

  Args:
    word_counts: from `WordCounter.counts`.
    vocab_size: the target size, reserved tokens included.
    min_count: the learner's `lower_thresh`.
    log: called with a printf-style progress line per search step.

  Returns:
    The tokens in id order: `RESERVED_TOKENS`, the single characters of the words it kept (words
    of the 1,000 most frequent characters, at most 50 characters long), then the learned pieces.

  Raises:
    ValueError: no words, or a target size or minimum count out of range.
  """
  if not word_counts:
    raise ValueError('no words to learn a vocabulary from: the input has no non-blank line.')
  if vocab_size <= len(RESERVED_TOKENS):
    raise ValueError(f'vocab_size={vocab_size} must exceed the {len(RESERVED_TOKENS)} reserved '
                     'tokens.')
  if min_count < 1:
    raise ValueError(f'min_count={min_count} must be >= 1.')
  params = learner.Params(
      upper_thresh=int(1e7), lower_thresh=min_count, num_iterations=4, max_input_tokens=int(5e6),
      max_token_length=50, max_unique_chars=1000, vocab_size=vocab_size, slack_ratio=0.05,
      include_joiner_token=True, joiner='##', reserved_tokens=list(RESERVED_TOKENS))
  pairs = list(word_counts.items())
  upper, lower = learner.get_search_threshs(pairs, params.upper_thresh, params.lower_thresh)
  all_counts = learner.get_input_words(pairs, params.reserved_tokens, params.max_token_length)
  allowed_chars = learner.get_allowed_chars(all_counts, params.max_unique_chars)
  counts = learner.filter_input_words(all_counts, allowed_chars, params.max_input_tokens)
  meter = progress.ProgressMeter()
  log('threshold search over word-piece counts [%s, %s] for %s input words: at most %d steps, '
      'each a full learning pass; the first one times the rest', f'{lower:,}', f'{upper:,}',
      f'{len(counts):,}', max(upper - lower, 1).bit_length() + 1)
  for step in itertools.count(1):  # `learner.learn_binary_search`, iteratively.
    threshold = (upper + lower) // 2
    vocab = learner.learn_with_thresh(counts, threshold, params)
    within_slack = (len(vocab) <= vocab_size
                    and vocab_size - len(vocab) <= params.slack_ratio * vocab_size)
    done = within_slack or lower >= upper or threshold <= 1
    if not done:
      if len(vocab) > vocab_size:
        lower = threshold + 1
      else:
        upper = threshold - 1
    # Each step halves [lower, upper]: at most about log2 of its width steps remain, each about
    # as long as the ones so far.
    remaining = max(upper - lower, 1).bit_length()
    outlook = ('done' if done else
               f'next in [{lower:,}, {upper:,}], at most {remaining} more steps')
    eta = ('' if done else
           f', ETA at most {progress.format_duration(meter.elapsed() / step * remaining)}')
    log('threshold search step %d: pieces seen >= %s times give %s tokens (target %s, at most '
        '%s below); %s, %s%s', step, f'{threshold:,}', f'{len(vocab):,}', f'{vocab_size:,}',
        f'{params.slack_ratio:.0%}', outlook, meter.timing(), eta)
    if done:
      return vocab


def write_vocabulary(tokens: list[str], path: str) -> None:
  """Writes one token per line; `path` appears only when complete."""
  atomic_files.write_text(path, ''.join(token + '\n' for token in tokens))


def unknown_token_counts(word_counts: dict[str, int], tokens: Iterable[str]) -> tuple[int, int]:
  """Counts WordPiece tokens and [UNK]s the BERT tokenizer would produce on the counted text.

  Exact for the counted lines: it applies the tokenizer's WordPiece stage (same defaults as
  `BertTokenizer`) to every distinct word and weights by the word's count.

  Args:
    word_counts: from `WordCounter.counts`.
    tokens: the vocabulary, in id order.

  Returns:
    (number of WordPiece tokens, number of them that are [UNK]).
  """
  tokens = list(tokens)
  table = tf.lookup.StaticVocabularyTable(
      tf.lookup.KeyValueTensorInitializer(
          tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64)),
      num_oov_buckets=1)
  wordpiece = tf_text.WordpieceTokenizer(table, token_out_type=tf.int64,
                                         unknown_token=tokenization.UNK_TOKEN)
  words = list(word_counts)
  counts = np.array([word_counts[w] for w in words], np.int64)
  pieces = wordpiece.tokenize(tf.constant(words, tf.string))  # [num_distinct_words, pieces]
  num_pieces = pieces.row_lengths().numpy()
  is_unk = tf.reduce_any(tf.equal(pieces, tokens.index(tokenization.UNK_TOKEN)), axis=1).numpy()
  # A word WordPiece cannot spell is exactly one [UNK].
  return int(np.sum(counts * num_pieces)), int(np.sum(counts[is_unk]))


def build_vocabulary(source: corpus.CorpusSource, output: str, vocab_size: int,
                     min_count: int = DEFAULT_MIN_COUNT, lower_case: bool = True,
                     max_lines: Optional[int] = None) -> str:
  """Counts `source`'s words, learns the vocabulary and writes it to `output`.

  Args:
    source: as for `count_words`; validated here.
    output: the vocabulary file; its directory is created if missing.
    vocab_size, min_count: as for `learn_vocabulary`.
    lower_case, max_lines: as for `count_words`.

  Returns:
    The summary for a person: tokens written and where, lines, words and distinct words read, the
    [UNK] rate of the input under the new vocabulary, skipped and repaired input.

  Raises:
    ValueError: a bad source or learner option. tf.errors.OpError: an unreadable input path.
  """
  if max_lines is not None and max_lines < 1:
    raise ValueError(f'max_lines={max_lines} must be >= 1.')
  source.validate()
  stats = corpus.CorpusStats()
  meter = progress.ProgressMeter()
  counter = count_words(source, stats, lower_case, max_lines)
  word_counts = counter.counts()
  logging.info('learning WordPiece pieces from %s distinct words (target size %s, min_count %d)',
               f'{len(word_counts):,}', f'{vocab_size:,}', min_count)
  tokens = learn_vocabulary(word_counts, vocab_size, min_count)
  if os.path.dirname(output):
    tf.io.gfile.makedirs(os.path.dirname(output))
  write_vocabulary(tokens, output)
  num_tokens, num_unk = unknown_token_counts(word_counts, tokens)
  return '\n'.join([
      f'wrote {len(tokens):,} tokens to {os.path.abspath(output)} in '
      f'{progress.format_duration(meter.elapsed())}',
      f'  lines {counter.num_lines:,} ({progress.format_bytes(stats.bytes)}), words '
      f'{counter.num_words:,}, distinct words {len(word_counts):,}',
      f'  [UNK] rate of the input under the new vocabulary: {num_unk:,} of {num_tokens:,} tokens '
      f'({num_unk / max(num_tokens, 1):.4%})',
      '  skipped: ' + ', '.join(f'{k} {v:,}' for k, v in stats.skipped().items()) +
      '; repaired: ' + ', '.join(f'{k} {v:,}' for k, v in stats.repaired().items()),
  ])
