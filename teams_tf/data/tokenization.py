"""WordPiece vocabulary I/O and the tensorflow-text BERT tokenizer built from it.

A vocabulary file holds one WordPiece token per line; the line number (from 0) is the token id. The
special tokens `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]` are looked up by name, so both the
embedded sample vocabulary (ids 0-4) and Google's BERT vocabulary (`[PAD]`=0, `[UNK]`=100,
`[CLS]`=101, `[SEP]`=102, `[MASK]`=103) work unchanged.
"""

import dataclasses
import os

import tensorflow as tf
import tensorflow_text as tf_text

from official.nlp.modeling import layers

from teams_tf.data import embedded

PAD_TOKEN = '[PAD]'
UNK_TOKEN = '[UNK]'
CLS_TOKEN = '[CLS]'
SEP_TOKEN = '[SEP]'
MASK_TOKEN = '[MASK]'
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

_FIX_HINT = ("Use vocab_file='sample:vocab', a BERT vocab.txt, or a vocabulary built with "
             'tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset with '
             f'reserved_tokens={list(SPECIAL_TOKENS)} (see teams_tf/data/sample/SOURCE.md).')


@dataclasses.dataclass(frozen=True)
class Vocabulary:
  """A WordPiece vocabulary and the ids of its special tokens.

  Attributes:
    path: absolute path of the vocabulary file.
    tokens: the tokens in id order.
    pad_id: id of `[PAD]`, which fills sequences up to their static length.
    unk_id: id of `[UNK]`, which replaces words the vocabulary cannot spell.
    cls_id: id of `[CLS]`, the first token of every sequence.
    sep_id: id of `[SEP]`, the token closing every segment.
    mask_id: id of `[MASK]`, the masked-LM corruption token.
  """
  path: str
  tokens: tuple[str, ...]
  pad_id: int
  unk_id: int
  cls_id: int
  sep_id: int
  mask_id: int

  @property
  def size(self) -> int:
    """Number of tokens, V."""
    return len(self.tokens)

  @property
  def special_ids(self) -> tuple[int, ...]:
    """Ids of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`: never masked, never sampled
    as replacements."""
    return (self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id)

  @property
  def continuation_ids(self) -> tuple[int, ...]:
    """Ids of WordPiece continuation pieces (`##...`): the pieces that extend the word
    before them."""
    return tuple(i for i, token in enumerate(self.tokens) if token.startswith('##'))


def load_vocabulary(path: str) -> Vocabulary:
  """Reads a WordPiece vocabulary file (one token per line, id = line number from 0).

  Args:
    path: a file path, or `sample:vocab` for the embedded vocabulary.

  Returns:
    The `Vocabulary` with its special token ids looked up by name.

  Raises:
    ValueError: the file is missing or empty, has an empty line or a duplicate token, or lacks one
      of `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`.
  """
  path = embedded.resolve_path(path)
  if not tf.io.gfile.exists(path):
    raise ValueError(f'Vocabulary file {path!r} does not exist. {_FIX_HINT}')
  with tf.io.gfile.GFile(path, 'r') as f:
    # Only the line terminator is removed: a token is the whole line, as tensorflow-text reads it.
    tokens = tuple(line.rstrip('\r\n') for line in f)
  if not tokens:
    raise ValueError(f'Vocabulary file {path!r} is empty. {_FIX_HINT}')

  token_ids = {}
  for line_number, token in enumerate(tokens, start=1):
    if not token.strip():
      raise ValueError(f'Vocabulary file {path!r} line {line_number} is blank; every line must '
                       'hold one token. Remove the blank line (ids of later tokens shift by one).')
    if token in token_ids:
      raise ValueError(f'Vocabulary file {path!r} has token {token!r} twice: '
                       f'line {token_ids[token] + 1} and line {line_number}. Remove one of them so '
                       'each token has a single id.')
    token_ids[token] = line_number - 1

  missing = [token for token in SPECIAL_TOKENS if token not in token_ids]
  if missing:
    raise ValueError(f'Vocabulary file {path!r} lacks the special token(s) {", ".join(missing)}. '
                     f'Add one line per missing token (their position sets their id). {_FIX_HINT}')
  return Vocabulary(
      path=os.path.abspath(path),
      tokens=tokens,
      pad_id=token_ids[PAD_TOKEN],
      unk_id=token_ids[UNK_TOKEN],
      cls_id=token_ids[CLS_TOKEN],
      sep_id=token_ids[SEP_TOKEN],
      mask_id=token_ids[MASK_TOKEN])


def build_tokenizer(vocab: Vocabulary, lower_case: bool = True) -> tf_text.BertTokenizer:
  """Builds the tensorflow-text BERT tokenizer (basic split, then WordPiece) for `vocab`.

  The lookup table is built from `vocab.tokens` rather than re-read from disk, so the tokenizer's
  ids are exactly the ones `load_vocabulary` validated. Call it outside `tf.data` map functions and
  capture the result: the table is a resource that must be created once.

  Args:
    vocab: the vocabulary from `load_vocabulary`.
    lower_case: lowercase, NFD-normalize and strip accents before WordPiece, as for uncased BERT;
      must match the setting the vocabulary was learned with (True for `sample:vocab`).

  Returns:
    A `BertTokenizer` whose `tokenize(strings)` maps a [N] string tensor to a ragged int32
    [N, words, wordpieces] tensor of ids; words it cannot spell become `vocab.unk_id`.
  """
  table = tf.lookup.StaticVocabularyTable(
      tf.lookup.KeyValueTensorInitializer(
          keys=tf.constant(vocab.tokens, dtype=tf.string),
          values=tf.range(vocab.size, dtype=tf.int64)),
      # WordPiece only queries tokens it checked for membership; the bucket is never a returned id.
      num_oov_buckets=1)
  return tf_text.BertTokenizer(
      table, token_out_type=tf.int32, unknown_token=UNK_TOKEN, lower_case=lower_case)


def text_token_weights(word_ids, input_mask, vocab: Vocabulary):
  """[B, T] float32: 1 for a packed text's own tokens (not padding, [CLS] or [SEP])."""
  is_special = tf.equal(word_ids, vocab.cls_id) | tf.equal(word_ids, vocab.sep_id)
  return tf.cast((input_mask > 0) & ~is_special, tf.float32)


def pack_texts(tokenizer, vocab: Vocabulary, texts, seq_length):
  """[B] strings -> `[CLS] text [SEP]` encoder inputs and the text's own tokens.

  Args:
    tokenizer: `build_tokenizer(vocab, ...)`.
    vocab: the vocabulary.
    texts: [B] string tensor; a text longer than `seq_length` - 2 tokens is truncated.
    seq_length: T.

  Returns:
    (dict of [B, T] int32 `input_word_ids`, `input_mask`, `input_type_ids`, [B, T] float32
    `text_token_weights`).
  """
  tokens = tokenizer.tokenize(texts).merge_dims(1, 2)
  inputs = layers.BertPackInputs.bert_pack_inputs(
      [tokens], seq_length, start_of_sequence_id=vocab.cls_id, end_of_segment_id=vocab.sep_id,
      padding_id=vocab.pad_id)
  return inputs, text_token_weights(inputs['input_word_ids'], inputs['input_mask'], vocab)
