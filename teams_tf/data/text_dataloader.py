"""Raw text files -> fixed-length, dynamically masked pretraining batches (Model Garden DataLoader).

Lines are read with `TextLineDataset`, blank lines dropped, each line WordPiece-tokenized by tensorflow-text,
and the token stream is cut into chunks of `seq_length - 2` tokens wrapped as `[CLS] chunk [SEP]` (the final
chunk is padded with `[PAD]`). In this first version document boundaries are ignored: a chunk can span the
end of one article and the start of the next (a later issue adds document-aware packing). Masking
(`masking.mask_tokens`) runs inside tf.data with a stateless seed per example derived from the config seed
and the example's index after `repeat`, so training masks change every epoch yet are reproducible for a fixed
seed, and the finite, unshuffled evaluation set gets the same masks on every load. Everything is tf.data
graph code; there are no Python generators.
"""

import dataclasses
from typing import Optional

import tensorflow as tf
from official.core import config_definitions as cfg
from official.nlp.data import data_loader
from official.nlp.data import data_loader_factory

from teams_tf.data import embedded
from teams_tf.data import masking
from teams_tf.data import tokenization

# Lines tokenized per tensorflow-text call; only throughput depends on it, never the output.
_LINES_PER_TOKENIZER_CALL = 256


@dataclasses.dataclass
class TextDataConfig(cfg.DataConfig):
  """Raw-text pretraining data.

  Uses the inherited `input_path` (comma-separated files or globs; `sample:train` / `sample:valid` name the
  embedded corpus), `global_batch_size`, `is_training` (True: repeat, shuffle, fresh masks per epoch;
  False: one finite pass with fixed masks), `seed` (None means 0: the pipeline is always reproducible),
  `shuffle_buffer_size`, `drop_remainder`, `sharding` (split the input among input pipelines) and `cache`
  (keep tokenized chunks in memory across epochs).
  """
  vocab_file: str = 'sample:vocab'
  # Must match the setting the vocabulary was learned with; `sample:vocab` is uncased.
  lower_case: bool = True
  # BERT pretrains 90% of steps at 128 tokens (Devlin et al. 2019, App. A.2); ELECTRA-Small uses 128 too.
  seq_length: int = 128
  # BERT's README value for 128-token sequences: round(126 * 0.15) = 19 predictions fit.
  max_predictions_per_seq: int = 20
  # BERT Sec. 3.1: 15% of the tokens are chosen for prediction.
  mask_rate: float = 0.15
  # BERT's 80/10/10 corruption, as in the BERT-style data the TEAMS paper used; ELECTRA uses 1.0/0.0.
  mask_token_rate: float = 0.8
  random_token_rate: float = 0.1


def _split_patterns(input_path) -> list[str]:
  """Returns the file patterns named by a comma-separated string or a list of them."""
  if isinstance(input_path, str):
    entries = [input_path]
  elif isinstance(input_path, (list, tuple)) and all(isinstance(p, str) for p in input_path):
    entries = list(input_path)
  else:
    raise ValueError(f'TextDataConfig.input_path={input_path!r} must be a string of comma-separated '
                     'files/globs or a list of them; named (dict) inputs are not supported.')
  patterns = [p.strip() for entry in entries for p in entry.split(',') if p.strip()]
  if not patterns:
    raise ValueError("TextDataConfig.input_path is empty; set it to text files or globs, e.g. "
                     "'sample:train' or '/data/wiki/*.txt'.")
  return patterns


def list_input_files(input_path) -> list[str]:
  """Expands `input_path` into files, in pattern order and sorted within each pattern.

  Raises:
    ValueError: a pattern matches no file (the message names the pattern).
  """
  files = []
  for pattern in _split_patterns(input_path):
    resolved = embedded.resolve_path(pattern)
    matches = sorted(tf.io.gfile.glob(resolved))
    if not matches:
      where = '' if resolved == pattern else f' (resolved to {resolved!r})'
      raise ValueError(f'TextDataConfig.input_path pattern {pattern!r}{where} matches no file; check the '
                       "path, or use 'sample:train' / 'sample:valid' for the embedded corpus.")
    files.extend(matches)
  return files


@data_loader_factory.register_data_loader_cls(TextDataConfig)
class TextDataLoader(data_loader.DataLoader):
  """Builds masked-LM pretraining batches from raw text files.

  `load()` yields dicts of
    `input_word_ids`: [B, T] int32, `[CLS] tokens [SEP] [PAD]...` with masking applied.
    `input_mask`: [B, T] int32, 1 for real tokens (including [CLS]/[SEP]), 0 for padding.
    `input_type_ids`: [B, T] int32, all 0 (one segment).
    `masked_lm_positions`: [B, P] int32, ascending distinct positions, 0 in padding slots.
    `masked_lm_ids`: [B, P] int32, original tokens at those positions, 0 in padding slots.
    `masked_lm_weights`: [B, P] float32, 1.0 for real predictions, 0.0 for padding slots.
  T = `seq_length`, P = `max_predictions_per_seq`, B = the per-replica batch size (static when
  `drop_remainder`).
  """

  def __init__(self, params: TextDataConfig):
    """Validates `params` and loads the vocabulary.

    Raises:
      ValueError: an invalid field (named in the message), an unreadable vocabulary, or an
        `input_path` that matches no file.
    """
    if params.is_training is None:
      raise ValueError('TextDataConfig.is_training is None; set True for training data (repeated, '
                       'shuffled, new masks every epoch) or False for evaluation data (one pass, '
                       'fixed masks).')
    if params.seq_length < 3:
      raise ValueError(f'TextDataConfig.seq_length={params.seq_length} must be >= 3 to hold [CLS], at '
                       'least one token and [SEP].')
    if params.max_predictions_per_seq > params.seq_length - 2:
      raise ValueError(f'TextDataConfig.max_predictions_per_seq={params.max_predictions_per_seq} must be '
                       f'<= seq_length - 2 = {params.seq_length - 2}, the most tokens a sequence can mask.')
    if params.global_batch_size < 1:
      raise ValueError(f'TextDataConfig.global_batch_size={params.global_batch_size} must be >= 1.')
    if params.is_training and params.shuffle_buffer_size < 1:
      raise ValueError(f'TextDataConfig.shuffle_buffer_size={params.shuffle_buffer_size} must be >= 1 for '
                       'training data.')
    self._params = params
    self._vocab = tokenization.load_vocabulary(params.vocab_file)
    masking.validate_masking_args(
        max_predictions_per_seq=params.max_predictions_per_seq, mask_rate=params.mask_rate,
        mask_token_rate=params.mask_token_rate, random_token_rate=params.random_token_rate,
        special_ids=self._vocab.special_ids, mask_id=self._vocab.mask_id, vocab_size=self._vocab.size)
    self._files = list_input_files(params.input_path)
    self._seed = 0 if params.seed is None else params.seed

  @property
  def vocabulary(self) -> tokenization.Vocabulary:
    """The vocabulary whose ids the batches use."""
    return self._vocab

  def _read_lines(self, input_context: Optional[tf.distribute.InputContext]) -> tf.data.Dataset:
    """Non-blank lines of this input pipeline's share of the files, in file order."""
    sharded = input_context is not None and self._params.sharding
    num_pipelines = input_context.num_input_pipelines if sharded else 1
    pipeline_id = input_context.input_pipeline_id if sharded else 0
    files = tf.data.Dataset.from_tensor_slices(self._files)
    # Whole files per pipeline when there are enough, so no pipeline reads bytes it discards.
    shard_files = len(self._files) >= num_pipelines
    if num_pipelines > 1 and shard_files:
      files = files.shard(num_pipelines, pipeline_id)
    lines = files.flat_map(tf.data.TextLineDataset)
    lines = lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)
    if num_pipelines > 1 and not shard_files:
      lines = lines.shard(num_pipelines, pipeline_id)
    return lines

  def _chunk(self, lines: tf.data.Dataset) -> tf.data.Dataset:
    """Tokenizes `lines` and packs the token stream into [T] int32 `[CLS] ... [SEP] [PAD]...` rows."""
    vocab = self._vocab
    seq_length = self._params.seq_length
    tokenizer = tokenization.build_tokenizer(vocab, lower_case=self._params.lower_case)

    def tokenize(batch_of_lines):
      # [N] strings -> ragged [N, words, wordpieces] -> flat [num_tokens] in reading order.
      return tokenizer.tokenize(batch_of_lines).flat_values

    tokens = lines.batch(_LINES_PER_TOKENIZER_CALL).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE)
    # Regroups the variable-length token runs into runs of exactly seq_length - 2 (the last one shorter).
    chunks = tokens.rebatch(seq_length - 2, drop_remainder=False)

    def wrap(chunk):
      word_ids = tf.concat([[vocab.cls_id], chunk, [vocab.sep_id]], axis=0)
      num_padding = seq_length - tf.size(word_ids)
      word_ids = tf.pad(word_ids, [[0, num_padding]], constant_values=vocab.pad_id)
      input_mask = tf.cast(tf.range(seq_length) < tf.size(chunk) + 2, tf.int32)  # [CLS] chunk [SEP]
      # [T]: the padding amount is data-dependent, so the static length is restored explicitly.
      return tf.ensure_shape(word_ids, [seq_length]), input_mask

    return chunks.map(wrap, num_parallel_calls=tf.data.AUTOTUNE)

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns the batched dataset for this input pipeline (see the class docstring for elements)."""
    params = self._params
    vocab = self._vocab
    dataset = self._chunk(self._read_lines(input_context))
    if params.cache:
      dataset = dataset.cache()
    if params.is_training:
      dataset = dataset.repeat()
    # The example index counts from 0 after `repeat`, so epoch e sees new masks; folding the pipeline id
    # into the base seed keeps masks of different input pipelines independent.
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    base_seed = tf.constant([self._seed, pipeline_id], dtype=tf.int64)

    def mask(index, word_ids_and_mask):
      word_ids, input_mask = word_ids_and_mask
      example = masking.mask_tokens(
          word_ids,
          tf.random.experimental.stateless_fold_in(base_seed, index),
          max_predictions_per_seq=params.max_predictions_per_seq,
          special_ids=vocab.special_ids,
          mask_id=vocab.mask_id,
          vocab_size=vocab.size,
          mask_rate=params.mask_rate,
          mask_token_rate=params.mask_token_rate,
          random_token_rate=params.random_token_rate)
      example['input_mask'] = input_mask
      example['input_type_ids'] = tf.zeros_like(input_mask)
      return example

    dataset = dataset.enumerate().map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    if params.is_training:
      dataset = dataset.shuffle(params.shuffle_buffer_size, seed=self._seed)
    batch_size = (input_context.get_per_replica_batch_size(params.global_batch_size)
                  if input_context else params.global_batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=params.drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)
