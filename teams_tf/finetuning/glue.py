"""GLUE examples as sentence-prediction TFRecords, with Model Garden's own record writer.

`write_records` turns the examples of a `classifier_data_lib.DataProcessor` (the TSV processors of
`glue_processors`, or Model Garden's TFDS ones) into the TFRecords and metadata that Model Garden's
sentence-prediction task reads, with `classifier_data_lib.generate_tf_record_from_data_file`
(`tools/create_glue_data.py` is its command line); it can hold out a slice of train for choosing
epochs and rates, and summarises what it wrote (labels, truncated examples).
"""

import collections
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from official.nlp.data import classifier_data_lib
from official.nlp.tools import tokenization as mg_tokenization

from teams_tf.data import tokenization
from teams_tf.finetuning import glue_processors
from teams_tf.utils import atomic_files


def check_vocabulary(vocab_file):
  """Loads a WordPiece vocabulary and checks it suits Model Garden's classifier_data_lib.

  `FullTokenizer` looks [CLS], [SEP] and [UNK] up by name, so their ids may be anything (sample
  vocabulary 2 / 3 / 1, BERT's 101 / 102 / 100). `classifier_data_lib.convert_single_example`
  however pads `input_ids` with the literal 0, which is [PAD] only if [PAD] has id 0 (true for
  both).

  Returns:
    The `teams_tf.data.tokenization.Vocabulary` (`sample:vocab` is resolved).

  Raises:
    ValueError: the vocabulary is invalid or its [PAD] id is not 0.
  """
  vocab = tokenization.load_vocabulary(vocab_file)
  if vocab.pad_id != 0:
    raise ValueError(f'{vocab.path} has [PAD] at id {vocab.pad_id}, but Model Garden\'s '
                     'classifier_data_lib pads input_ids with 0; put [PAD] on the first line.')
  return vocab


class ConversionStats:
  """What `write_records` wrote, per split ('train', 'dev', 'heldout'), with progress logging.

  Attributes:
    read: examples the processor returned.
    written: examples written (read, or the --max_train_examples subset).
    label_ids: the label id (float score for regression) of every written example.
    full_length: examples filling all max_seq_length positions (possibly truncated).
  """

  def __init__(self, max_seq_length, report_every_seconds=10.0):
    self._max_seq_length = max_seq_length
    self._report_every_seconds = report_every_seconds
    self.read, self.written = {}, {}
    self.label_ids = collections.defaultdict(list)
    self.full_length = collections.Counter()
    self._split = None
    self._start = self._last_report = time.time()

  def start(self, split, read, written):
    self._split, self.read[split], self.written[split] = split, read, written
    self._start = self._last_report = time.time()
    logging.info('%s: featurizing %d examples', split, written)

  def add(self, ex_index, feature):
    self.label_ids[self._split].append(feature.label_id)
    self.full_length[self._split] += int(sum(feature.input_mask) == self._max_seq_length)
    now = time.time()
    if now - self._last_report >= self._report_every_seconds:
      self._last_report = now
      done, total = ex_index + 1, self.written[self._split]
      rate = done / (now - self._start)
      logging.info('%s: %d/%d examples (%.0f%%), %.0f examples/s, ETA %.0f s', self._split,
                   done, total, 100 * done / total, rate, (total - done) / rate)


class _CountingProcessor:
  """A `DataProcessor` that takes the train subset, sets a held-out slice aside and counts.

  Model Garden's `generate_tf_record_from_data_file` reads examples and featurizes them through
  the processor it is given; this one delegates both to the wrapped processor (any
  `classifier_data_lib.DataProcessor`) and records every featurized example in `stats`. The
  held-out slice is returned as the "test" examples, which Model Garden writes last, with
  their labels.
  """

  def __init__(self, processor, stats, max_train_examples, subset_seed, heldout_examples=0):
    self._processor = processor
    self._stats = stats
    self._max_train_examples = max_train_examples
    self._subset_seed = subset_seed
    self._heldout_examples = heldout_examples
    self._heldout = []

  def __getattr__(self, name):
    # What Model Garden reads with getattr (label_type, is_regression, weight_key, ...).
    return getattr(self._processor, name)

  def get_processor_name(self):
    return self._processor.get_processor_name()

  def get_labels(self):
    return self._processor.get_labels()

  def get_train_examples(self, data_dir):
    examples = self._processor.get_train_examples(data_dir)
    read = len(examples)
    if self._max_train_examples is not None and self._max_train_examples < read:
      keep = np.sort(np.random.default_rng(self._subset_seed).choice(
          read, self._max_train_examples, replace=False))
      examples = [examples[i] for i in keep]
    if self._heldout_examples:
      if self._heldout_examples >= len(examples):
        raise ValueError(f'heldout_examples={self._heldout_examples} leaves no train example of '
                         f'{len(examples)}.')
      # Its own stream: the slice does not change which examples the subset keeps.
      chosen = set(np.random.default_rng([self._subset_seed, 1]).choice(
          len(examples), self._heldout_examples, replace=False).tolist())
      self._heldout = [e for i, e in enumerate(examples) if i in chosen]
      examples = [e for i, e in enumerate(examples) if i not in chosen]
    self._stats.start('train', read, len(examples))
    return examples

  def get_dev_examples(self, data_dir):
    examples = self._processor.get_dev_examples(data_dir)
    self._stats.start('dev', len(examples), len(examples))
    return examples

  def get_test_examples(self, data_dir):
    del data_dir  # Only called for the held-out slice (`write_records`).
    self._stats.start('heldout', len(self._heldout), len(self._heldout))
    return self._heldout

  def featurize_example(self, ex_index, *args, **kwargs):
    feature = self._processor.featurize_example(ex_index, *args, **kwargs)
    self._stats.add(ex_index, feature)
    return feature


RECORD_FILES = {'train': 'train.tfrecord', 'dev': 'dev.tfrecord', 'heldout': 'heldout.tfrecord'}


def write_records(processor, data_dir, vocab, lower_case, max_seq_length, output_dir, task,
                  source, max_train_examples=None, subset_seed=0, heldout_examples=0):
  """Writes `<output_dir>/{train,dev}.tfrecord` and `meta_data.json` with Model Garden's
  `generate_tf_record_from_data_file` and `FullTokenizer`; with `heldout_examples`, also
  `heldout.tfrecord`, a seeded slice of the train examples that train.tfrecord then lacks, on
  which fine-tuning can choose its epoch and learning rate without reading dev.

  Records are written under temporary names and renamed when both are complete; an old
  meta_data.json is removed first and the new one written last, so its presence marks a complete
  conversion. For a regression task it records `train_label_mean` and `train_label_std` of
  train.tfrecord's scores, the scale of standardized regression targets.

  Args:
    processor: a `classifier_data_lib.DataProcessor` (a `glue_processors` one or Model Garden's
      TFDS one).
    data_dir: passed to the processor (None for TFDS processors).
    vocab: the `Vocabulary` from `check_vocabulary`.
    lower_case: FullTokenizer's `do_lower_case`.
    max_seq_length: T, [CLS] and [SEP]s included.
    output_dir: destination folder, created if missing.
    task: GLUE task name, recorded in meta_data.json.
    source: where the examples came from, recorded in meta_data.json.
    max_train_examples: if set, a random subset of this many train examples (kept in file order).
    subset_seed: seed of that subset and of the held-out slice.
    heldout_examples: train examples (of the subset) written to heldout.tfrecord instead.

  Returns:
    (meta_data dict, ConversionStats).
  """
  tf.io.gfile.makedirs(output_dir)
  stats = ConversionStats(max_seq_length)
  tokenizer = mg_tokenization.FullTokenizer(vocab.path, do_lower_case=lower_case)
  splits = [split for split in RECORD_FILES if split != 'heldout' or heldout_examples]
  final = {split: os.path.join(output_dir, RECORD_FILES[split]) for split in splits}
  temporary = {split: f'{path}.tmp-{os.getpid()}' for split, path in final.items()}
  meta_path = os.path.join(output_dir, 'meta_data.json')
  try:
    meta_data = classifier_data_lib.generate_tf_record_from_data_file(
        _CountingProcessor(processor, stats, max_train_examples, subset_seed, heldout_examples),
        data_dir, tokenizer, train_data_output_path=temporary['train'],
        eval_data_output_path=temporary['dev'], test_data_output_path=temporary.get('heldout'),
        max_seq_length=max_seq_length)
    if tf.io.gfile.exists(meta_path):
      tf.io.gfile.remove(meta_path)
    stale = os.path.join(output_dir, RECORD_FILES['heldout'])
    if not heldout_examples and tf.io.gfile.exists(stale):
      tf.io.gfile.remove(stale)  # A slice of an earlier conversion is not of these records.
    for split in final:
      tf.io.gfile.rename(temporary[split], final[split], overwrite=True)
  finally:
    for path in temporary.values():
      if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)
  meta_data.update(
      task=task,
      num_labels=meta_data.get('num_labels', 1),  # Regression (stsb): one output.
      source=source,
      train_examples_read=stats.read['train'],
      max_train_examples=max_train_examples,
      subset_seed=subset_seed if max_train_examples is not None or heldout_examples else None,
      heldout_data_size=meta_data.pop('test_data_size', 0),
      skipped_rows=dict(getattr(processor, 'skipped_rows', {})),
      vocab_file=vocab.path,
      vocab_size=vocab.size,
      lower_case=lower_case,
      special_ids={'pad': vocab.pad_id, 'unk': vocab.unk_id, 'cls': vocab.cls_id,
                   'sep': vocab.sep_id})
  if meta_data['num_labels'] == 1:
    # What regression on standardized targets needs (`ModelConfig.regression_mean/std`).
    scores = np.asarray(stats.label_ids['train'], np.float64)
    meta_data.update(train_label_mean=float(scores.mean()), train_label_std=float(scores.std()))
  atomic_files.write_json(meta_path, meta_data)
  return meta_data, stats


def convert_tsv(task, source, output_dir, vocab_file, lower_case, max_seq_length,
                max_train_examples=None, subset_seed=0, heldout_examples=0):
  """`write_records` for the task folder `source` of a GLUE download (`tsv_processor`)."""
  return write_records(glue_processors.tsv_processor(task), source, check_vocabulary(vocab_file),
                       lower_case, max_seq_length, output_dir, task, source, max_train_examples,
                       subset_seed, heldout_examples)


def _label_summary(label_ids, label_names):
  if label_names is None:
    return (f'scores mean {sum(label_ids) / len(label_ids):.2f}, min {min(label_ids):.2f}, '
            f'max {max(label_ids):.2f}')
  counts = collections.Counter(label_ids)
  return 'labels ' + ', '.join(f'{name}={i}: {counts[i]}' for i, name in enumerate(label_names))


def conversion_summary(meta_data, stats, label_names) -> str:
  """What `write_records` wrote, in lines for a person: the vocabulary, then per split the
  examples (and the subset they were drawn from), labels or score range, sequences filling all
  positions and skipped rows, then meta_data.json's sizes.

  Args:
    meta_data: `write_records`' meta data.
    stats: its `ConversionStats`.
    label_names: the processor's `get_labels()`; None for regression (stsb).
  """
  special, length = meta_data['special_ids'], meta_data['max_seq_length']
  lines = [f'  vocabulary {meta_data["vocab_file"]}: {meta_data["vocab_size"]} tokens, '
           f'[PAD]={special["pad"]} [UNK]={special["unk"]} [CLS]={special["cls"]} '
           f'[SEP]={special["sep"]}; lower_case={meta_data["lower_case"]}; '
           f'max_seq_length={length}']
  for split, name in RECORD_FILES.items():
    if split not in stats.written:
      continue
    subset = (f' (random subset of {stats.read[split]}, seed {meta_data["subset_seed"]})'
              if stats.read[split] != stats.written[split] else '')
    skipped = meta_data['skipped_rows'].get(split, 0)
    lines.append(f'  {split}: {stats.written[split]} examples{subset} -> {name}; '
                 f'{_label_summary(stats.label_ids[split], label_names)}; '
                 f'{stats.full_length[split]} fill all {length} positions (may be truncated)' +
                 (f'; {skipped} malformed rows skipped' if skipped else ''))
  lines.append('  meta_data.json: ' + ', '.join(
      f'{key}={meta_data[key]}' for key in ('task', 'train_data_size', 'eval_data_size',
                                            'heldout_data_size', 'num_labels', 'max_seq_length')))
  return '\n'.join(lines)
