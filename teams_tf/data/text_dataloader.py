"""Raw text files -> fixed-length `[CLS] ... [SEP]` token sequences, tokenized on the fly.

Lines are read with `TextLineDataset`, blank lines dropped, each line WordPiece-tokenized by
tensorflow-text, and the token stream is cut into chunks of `seq_length - 2` tokens wrapped as
`[CLS] chunk [SEP]` (the final chunk is padded with `[PAD]`). For training, the input is mixed
before tokenizing: the file order is shuffled every epoch, several files are read interleaved, and
lines (paragraphs) pass through a shuffle buffer, so consecutive sequences come from different
articles instead of one corpus file after another. Evaluation reads the files in the given order,
one after another. Document boundaries are ignored on this path: a chunk can span the end of one
paragraph and the start of the next (on the training path, usually a paragraph of another article).
For document-aware packing with sentence-pair segments, write TFRecords with
`tools/create_pretraining_data.py` and read them with `input_format='tfrecord'`. Everything is
tf.data graph code; there are no Python generators.
"""

from typing import Optional

import tensorflow as tf

from teams_tf.data import input_files
from teams_tf.data import tokenization

# Lines tokenized per tensorflow-text call; only throughput depends on it, never the output.
_LINES_PER_TOKENIZER_CALL = 256
# Files read at once when training and `cycle_length` is unset; the TFRecord path uses the same.
_DEFAULT_CYCLE_LENGTH = 8


def text_sequences(files: list[str],
                   vocab: tokenization.Vocabulary,
                   seq_length: int,
                   lower_case: bool,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   sharding: bool = True,
                   shuffle_seed: Optional[int] = None,
                   line_shuffle_buffer_size: int = 1,
                   cycle_length: Optional[int] = None,
                   block_length: int = 1) -> tf.data.Dataset:
  """Packs this input pipeline's share of `files` into sequences.

  Args:
    files: text files, one paragraph per line; blank lines are skipped.
    vocab: the WordPiece vocabulary.
    seq_length: T.
    lower_case: whether the tokenizer lowercases (must match the vocabulary).
    input_context: distribution input context (per-host sharding), or None.
    sharding: whether to split the input among pipelines.
    shuffle_seed: None (evaluation) reads the files in the given order, one after another, each line
      in file order. If set (training), the file order is shuffled with this seed anew every epoch,
      `cycle_length` files are read interleaved and the lines are shuffled through a buffer of
      `line_shuffle_buffer_size` lines; the order is still a fixed function of the seed.
    line_shuffle_buffer_size: lines in the line shuffle buffer when `shuffle_seed` is set (1: none).
    cycle_length: files read concurrently when `shuffle_seed` is set (default: up to 8).
    block_length: consecutive lines taken from each file in turn when `shuffle_seed` is set.

  Returns:
    Dataset of (`input_word_ids` [T] int32, `input_mask` [T] int32,
      `input_type_ids` [T] int32 all 0).
  """
  tokenizer = tokenization.build_tokenizer(vocab, lower_case=lower_case)

  def non_blank(lines):
    return lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)

  def read(file_names):
    if shuffle_seed is None:
      return non_blank(file_names.flat_map(tf.data.TextLineDataset))
    # Every pipeline shuffles with the same seed: when pipelines split lines rather than files
    # (fewer files than pipelines), they must all see the same line order to get disjoint shares.
    file_names = file_names.shuffle(len(files), seed=shuffle_seed, reshuffle_each_iteration=True)
    return file_names.interleave(
        tf.data.TextLineDataset,
        cycle_length=cycle_length or min(len(files), _DEFAULT_CYCLE_LENGTH),
        block_length=block_length, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  def tokenize(batch_of_lines):
    # [N] strings -> ragged [N, words, wordpieces] -> flat [num_tokens] in reading order.
    return tokenizer.tokenize(batch_of_lines).flat_values

  lines = input_files.read_sharded(files, read, input_context, sharding)
  if shuffle_seed is not None:
    lines = lines.shuffle(line_shuffle_buffer_size, seed=shuffle_seed,
                          reshuffle_each_iteration=True)
    # Blank lines are dropped after the buffer: the filter costs ~10x reading a line, and before the
    # buffer all of it would delay the first batch. They are ~1-2% of lines of text with blank
    # lines between articles, so the buffer holds almost as many paragraphs as lines.
    lines = non_blank(lines)
  tokens = lines.batch(_LINES_PER_TOKENIZER_CALL).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
  # Regroups the variable-length token runs into runs of exactly seq_length - 2
  # (the last one shorter).
  chunks = tokens.rebatch(seq_length - 2, drop_remainder=False)

  def wrap(chunk):
    word_ids = tf.concat([[vocab.cls_id], chunk, [vocab.sep_id]], axis=0)
    num_padding = seq_length - tf.size(word_ids)
    word_ids = tf.pad(word_ids, [[0, num_padding]], constant_values=vocab.pad_id)
    input_mask = tf.cast(tf.range(seq_length) < tf.size(chunk) + 2, tf.int32)  # [CLS] chunk [SEP]
    # [T]: the padding amount is data-dependent, so the static length is restored explicitly.
    return tf.ensure_shape(word_ids, [seq_length]), input_mask, tf.zeros_like(input_mask)

  return chunks.map(wrap, num_parallel_calls=tf.data.AUTOTUNE)
