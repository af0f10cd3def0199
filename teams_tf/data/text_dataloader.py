"""Raw text files -> fixed-length `[CLS] ... [SEP]` token sequences, tokenized on the fly.

Lines are read with `TextLineDataset`, blank lines dropped, each line WordPiece-tokenized by tensorflow-text,
and the token stream is cut into chunks of `seq_length - 2` tokens wrapped as `[CLS] chunk [SEP]` (the final
chunk is padded with `[PAD]`). Document boundaries are ignored on this path: a chunk can span the end of one
article and the start of the next. For document-aware packing with sentence-pair segments, write TFRecords
with `tools/create_pretraining_data.py` and read them with `input_format='tfrecord'`. Everything is tf.data
graph code; there are no Python generators.
"""

from typing import Optional

import tensorflow as tf

from teams_tf.data import input_files
from teams_tf.data import tokenization

# Lines tokenized per tensorflow-text call; only throughput depends on it, never the output.
_LINES_PER_TOKENIZER_CALL = 256


def text_sequences(files: list[str],
                   vocab: tokenization.Vocabulary,
                   seq_length: int,
                   lower_case: bool,
                   input_context: Optional[tf.distribute.InputContext] = None,
                   sharding: bool = True) -> tf.data.Dataset:
  """Packs this input pipeline's share of `files` into sequences.

  Args:
    files: text files, one paragraph per line; blank lines are skipped.
    vocab: the WordPiece vocabulary.
    seq_length: T.
    lower_case: whether the tokenizer lowercases (must match the vocabulary).
    input_context: distribution input context (per-host sharding), or None.
    sharding: whether to split the input among pipelines.

  Returns:
    Dataset of (`input_word_ids` [T] int32, `input_mask` [T] int32, `input_type_ids` [T] int32 all 0).
  """
  tokenizer = tokenization.build_tokenizer(vocab, lower_case=lower_case)

  def read(file_names):
    lines = file_names.flat_map(tf.data.TextLineDataset)
    return lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)

  def tokenize(batch_of_lines):
    # [N] strings -> ragged [N, words, wordpieces] -> flat [num_tokens] in reading order.
    return tokenizer.tokenize(batch_of_lines).flat_values

  lines = input_files.read_sharded(files, read, input_context, sharding)
  tokens = lines.batch(_LINES_PER_TOKENIZER_CALL).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
  # Regroups the variable-length token runs into runs of exactly seq_length - 2 (the last one shorter).
  chunks = tokens.rebatch(seq_length - 2, drop_remainder=False)

  def wrap(chunk):
    word_ids = tf.concat([[vocab.cls_id], chunk, [vocab.sep_id]], axis=0)
    num_padding = seq_length - tf.size(word_ids)
    word_ids = tf.pad(word_ids, [[0, num_padding]], constant_values=vocab.pad_id)
    input_mask = tf.cast(tf.range(seq_length) < tf.size(chunk) + 2, tf.int32)  # [CLS] chunk [SEP]
    # [T]: the padding amount is data-dependent, so the static length is restored explicitly.
    return tf.ensure_shape(word_ids, [seq_length]), input_mask, tf.zeros_like(input_mask)

  return chunks.map(wrap, num_parallel_calls=tf.data.AUTOTUNE)
