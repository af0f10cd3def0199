"""Pretraining input for every objective: one data config, three input formats.

`input_format` selects where sequences come from:
  'text' (default; the embedded sample's path): raw text files, tokenized with tensorflow-text and
    packed on the fly (`text_dataloader`).
  'tfrecord': unmasked sequences from `tools/create_pretraining_data.py --output_kind=unmasked`
    (`record_dataloader`), document-aware and with sentence-pair segment ids.
  'masked_tfrecord': statically masked examples (`--output_kind=masked`, the TEAMS paper's 40
    masks per sequence) in Model Garden's BERT format, read by Model Garden's loader.
'text' and 'tfrecord' are masked dynamically here (`masking.mask_tokens`) with a stateless seed per
example derived from the config seed and the example's index after `repeat`: training masks change
every epoch yet are reproducible for a fixed seed, and a finite evaluation set gets the same masks
on every load. Every format yields the same features:
  `input_word_ids` [B, T] int32, `input_mask` [B, T] int32, `input_type_ids` [B, T] int32,
  `masked_lm_positions` [B, P] int32, `masked_lm_ids` [B, P] int32,
  `masked_lm_weights` [B, P] float32.
"""

import dataclasses
from typing import Optional

import tensorflow as tf

from official.core import config_definitions as cfg
from official.nlp.data import data_loader
from official.nlp.data import data_loader_factory

from teams_tf.data import corpus
from teams_tf.data import input_files
from teams_tf.data import masking
from teams_tf.data import record_dataloader
from teams_tf.data import text_dataloader
from teams_tf.data import tokenization

INPUT_FORMATS = ('text', 'tfrecord', 'masked_tfrecord')


@dataclasses.dataclass
class PretrainDataConfig(cfg.DataConfig):
  """Pretraining data for every objective.

  Uses the inherited `input_path` (comma-separated files or globs; `sample:train` / `sample:valid`
  name the embedded corpus), `global_batch_size`, `is_training` (True: repeat, shuffle, fresh masks
  per epoch; False: one finite pass in file order with fixed masks), `seed` (None means 0: the
  pipeline is always reproducible; it seeds every shuffle), `shuffle_buffer_size` (masked sequences
  shuffled before batching when training), `drop_remainder`, `sharding` (split the input among input
  pipelines), `cache` (after packing: later epochs replay the first epoch's sequence order),
  `cycle_length` and `block_length` (files read interleaved, default up to 8, one element from each
  in turn: TFRecords always, raw text when training).

  Raw-text training mixes at two levels: `line_shuffle_buffer_size` shuffles paragraphs from the
  interleaved files before packing, so one batch spans many articles; `shuffle_buffer_size` then
  shuffles the packed sequences. Model Garden's default of 100 sequences is kept: after the line
  shuffle it only has to spread the few consecutive chunks of one long paragraph, and a larger
  buffer would delay the first batch by tokenizing all of it first (set it explicitly to mix more).
  """
  input_format: str = 'text'
  # Used to tokenize raw text and to know the special and continuation ids when masking; must be
  # the vocabulary the records were written with.
  vocab_file: str = 'sample:vocab'
  # Must match the setting the vocabulary was learned with; `sample:vocab` is uncased.
  lower_case: bool = True
  # BERT pretrains 90% of steps at 128 tokens (Devlin et al. 2019, App. A.2);
  # ELECTRA-Small uses 128 too.
  seq_length: int = 128
  # BERT's README value for 128-token sequences: round(126 * 0.15) = 19 predictions fit.
  max_predictions_per_seq: int = 20
  # BERT Sec. 3.1: 15% of the tokens are chosen for prediction.
  mask_rate: float = 0.15
  # BERT's 80/10/10 corruption, as in the BERT-style data the TEAMS paper used;
  # ELECTRA uses 1.0/0.0.
  mask_token_rate: float = 0.8
  random_token_rate: float = 0.1
  # Mask whole words (all WordPiece pieces together), as BERT's whole-word-masking models; off in
  # the TEAMS, ELECTRA and BERT papers' original data.
  whole_word_masking: bool = False
  # Raw-text training only: paragraphs (lines) shuffled before tokenizing; 1 turns it off. A line is
  # ~100-2,000 bytes (~400 on average in Wikipedia extracts), so 10,000 lines hold ~4 MB (at most
  # ~20 MB) per input pipeline, and reading them before the first batch takes ~0.1 s (only
  # tokenizing is slow, and it happens after the buffer). With 8 files interleaved the buffer spans
  # ~1,250 consecutive lines of each (~18 long Wikipedia articles, or many more short ones):
  # batches draw from ~150 articles at a time.
  line_shuffle_buffer_size: int = 10_000


def _validate(params: PretrainDataConfig):
  """Checks the fields every format uses; ValueError names the field and the fix."""
  if params.input_format not in INPUT_FORMATS:
    raise ValueError(f'input_format={params.input_format!r} is not one of {INPUT_FORMATS}.')
  if params.is_training is None:
    raise ValueError('is_training is None; set True for training data (repeated, shuffled, new '
                     'masks every epoch) or False for evaluation data (one pass, fixed masks).')
  if params.seq_length < 3:
    raise ValueError(f'seq_length={params.seq_length} must be >= 3 to hold [CLS], at least one '
                     'token and [SEP].')
  if params.global_batch_size < 1:
    raise ValueError(f'global_batch_size={params.global_batch_size} must be >= 1.')
  if params.is_training and params.shuffle_buffer_size < 1:
    raise ValueError(f'shuffle_buffer_size={params.shuffle_buffer_size} must be >= 1 for training '
                     'data.')
  if params.is_training and params.input_format == 'text' and params.line_shuffle_buffer_size < 1:
    raise ValueError(f'line_shuffle_buffer_size={params.line_shuffle_buffer_size} must be >= 1 for '
                     'raw-text training data (1 turns the line shuffle off).')


@data_loader_factory.register_data_loader_cls(PretrainDataConfig)
class PretrainDataLoader(data_loader.DataLoader):
  """Builds masked-LM pretraining batches; see the module docstring for formats and features.

  T = `seq_length`, P = `max_predictions_per_seq`, B = the per-replica batch size (static when
  `drop_remainder`). Positions are ascending and distinct, with 0 in padded prediction slots
  (weight 0); special tokens and padding are never masked.
  """

  def __init__(self, params: PretrainDataConfig):
    """Validates `params`, loads the vocabulary and lists the input files.

    Raises:
      ValueError: an invalid field (named in the message), an unreadable vocabulary, an
        `input_path` that matches no file, or records whose summary says they were written with
        another length, prediction count, kind or vocabulary.
    """
    _validate(params)
    self._params = params
    self._vocab = tokenization.load_vocabulary(params.vocab_file)
    masking.validate_masking_args(
        max_predictions_per_seq=params.max_predictions_per_seq, mask_rate=params.mask_rate,
        mask_token_rate=params.mask_token_rate, random_token_rate=params.random_token_rate,
        special_ids=self._vocab.special_ids, mask_id=self._vocab.mask_id,
        vocab_size=self._vocab.size, seq_length=params.seq_length)
    self._files = input_files.list_input_files(params.input_path)
    if params.input_format == 'text':
      self._files = corpus.usable_text_files(self._files, params.input_path)
    else:
      record_dataloader.check_records_fit(
          self._files, params, self._vocab,
          'task.train_data' if params.is_training else 'task.validation_data')
    self._seed = 0 if params.seed is None else params.seed

  @property
  def vocabulary(self) -> tokenization.Vocabulary:
    """The vocabulary whose ids the batches use."""
    return self._vocab

  def _sequences(self, input_context):
    params = self._params
    shuffle_seed = self._seed if params.is_training else None
    if params.input_format == 'text':
      return text_dataloader.text_sequences(
          self._files, self._vocab, params.seq_length, params.lower_case, input_context,
          params.sharding, shuffle_seed=shuffle_seed,
          line_shuffle_buffer_size=params.line_shuffle_buffer_size,
          cycle_length=params.cycle_length, block_length=params.block_length)
    return record_dataloader.unmasked_sequences(
        self._files, params.seq_length, input_context, params.sharding, shuffle_seed=shuffle_seed,
        cycle_length=params.cycle_length, block_length=params.block_length)

  def load(self, input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
    """Returns the batched dataset for this input pipeline."""
    params = self._params
    if params.input_format == 'masked_tfrecord':
      return record_dataloader.masked_examples(params, self._files, input_context)
    vocab = self._vocab
    dataset = self._sequences(input_context)
    if params.cache:
      dataset = dataset.cache()
    if params.is_training:
      dataset = dataset.repeat()
    # The example index counts from 0 after `repeat`, so epoch e sees new masks; folding the
    # pipeline id into the base seed keeps masks of different input pipelines independent.
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    base_seed = tf.constant([self._seed, pipeline_id], dtype=tf.int64)
    continuation_ids = vocab.continuation_ids if params.whole_word_masking else ()

    def mask(index, sequence):
      word_ids, input_mask, type_ids = sequence
      example = masking.mask_tokens(
          word_ids,
          tf.random.experimental.stateless_fold_in(base_seed, index),
          max_predictions_per_seq=params.max_predictions_per_seq,
          special_ids=vocab.special_ids,
          mask_id=vocab.mask_id,
          vocab_size=vocab.size,
          mask_rate=params.mask_rate,
          mask_token_rate=params.mask_token_rate,
          random_token_rate=params.random_token_rate,
          continuation_ids=continuation_ids)
      example['input_mask'] = input_mask
      example['input_type_ids'] = type_ids
      return example

    dataset = dataset.enumerate().map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    if params.is_training:
      dataset = dataset.shuffle(params.shuffle_buffer_size, seed=self._seed)
    batch_size = (input_context.get_per_replica_batch_size(params.global_batch_size)
                  if input_context else params.global_batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=params.drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)
