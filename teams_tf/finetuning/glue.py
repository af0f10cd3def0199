"""GLUE from its original TSV files as Model Garden `DataProcessor`s, and their TFRecords.

Model Garden 2.20's GLUE processors (`official.nlp.data.classifier_data_lib`) read only from TFDS.
The processors here read the `train.tsv` / `dev.tsv` files that GLUE's download script writes (MNLI:
`dev_matched.tsv`) and return `classifier_data_lib.InputExample`s; `write_records` turns them (or
Model Garden's TFDS processors' examples) into sentence-prediction TFRecords with Model Garden's own
`generate_tf_record_from_data_file` (`tools/create_glue_data.py` is its command line). Column
layouts follow GLUE and BERT's `run_classifier.py`:

  task  header  columns   text_a, text_b             label column: values
  cola  no      4         3 (sentence), -            1: '0' / '1'
  sst2  yes     2         0 (sentence), -            1: '0' / '1'
  mrpc  yes     5         3, 4 (#1 / #2 String)      0 (Quality): '0' / '1'
  qqp   yes     6         3, 4 (question1 / 2)       5 (is_duplicate): '0' / '1'
  mnli  yes     12 / 16   8, 9 (sentence1 / 2)       last (gold_label): 3 strings
  qnli  yes     4         1, 2 (question, sentence)  3: 'entailment' / 'not_entailment'
  rte   yes     4         1, 2 (sentence1 / 2)       3: 'entailment' / 'not_entailment'
  stsb  yes     10        7, 8 (sentence1 / 2)       9 (score): float in [0, 5]

Files are split on tabs only (no quoting: some sentences start with `"`), texts are stripped (SST-2
sentences end in a space). A row with the wrong number of columns or an unknown label raises
`ValueError` naming the file and its 1-based line, except in QQP, whose malformed rows are counted
(`skipped_rows`) and skipped as BERT's reference processor does. Label ids are the index in
`get_labels()`, ordered like the TFDS `glue/*` ClassLabels that Model Garden's TFDS processors
use, so records from either source carry the same ids.
"""

import collections
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from official.nlp.data import classifier_data_lib
from official.nlp.tools import tokenization as mg_tokenization

from teams_tf.data import tokenization
from teams_tf.utils import atomic_files

# The GLUE tasks of the TEAMS paper (Table 2), named as in `registry/finetune_experiments.py`.
TASKS = ('cola', 'sst2', 'mrpc', 'qqp', 'mnli', 'qnli', 'rte', 'stsb')


class GlueTsvProcessor(classifier_data_lib.DataProcessor):
  """Reads one GLUE task's original TSV files; subclasses state the layout.

  Attributes:
    skipped_rows: {'train' | 'dev': number of malformed rows skipped} (QQP only; others raise).
  """
  task = ''
  processor_name = ''
  # Label strings in id order; None for regression.
  labels = None
  has_header = True
  # {'train': count, 'dev': count} of tab-separated columns every row (and the header) must have.
  num_columns = {}
  files = {'train': 'train.tsv', 'dev': 'dev.tsv'}
  text_a_column = 0
  text_b_column = None
  label_column = -1
  skip_malformed_rows = False

  def __init__(self, process_text_fn=mg_tokenization.convert_to_unicode):
    super().__init__(process_text_fn)
    self.skipped_rows = {}

  def get_train_examples(self, data_dir):
    """InputExamples of `<data_dir>/train.tsv`, in file order."""
    return self._create_examples(data_dir, 'train')

  def get_dev_examples(self, data_dir):
    """InputExamples of the labelled dev file (`dev.tsv`; MNLI `dev_matched.tsv`), in file order."""
    return self._create_examples(data_dir, 'dev')

  def get_labels(self):
    return list(self.labels) if self.labels is not None else None

  def get_processor_name(self):  # pylint: disable=arguments-differ
    return self.processor_name

  def _label(self, value, location):
    """Returns the label of one row, or raises ValueError naming `location` (file:line)."""
    if value not in self.labels:
      raise ValueError(f'{location}: label {value!r} is not one of {list(self.labels)} '
                       f'({self.task} column {self.label_column}).')
    return value

  def _create_examples(self, data_dir, split):
    path = os.path.join(data_dir, self.files[split])
    if not tf.io.gfile.exists(path):
      raise ValueError(f'{path} does not exist: --glue_dir must hold the GLUE {self.task} files '
                       f'{sorted(self.files.values())}.')
    with tf.io.gfile.GFile(path, 'rb') as f:
      lines = f.read().decode('utf-8').split('\n')
    if lines and not lines[-1]:
      lines.pop()  # The newline ending the last row (CoLA's dev.tsv has none).
    expected = self.num_columns[split]
    examples, skipped = [], []
    for line_number, line in enumerate(lines, start=1):
      row = line.split('\t')
      location = f'{path}:{line_number}'
      if len(row) != expected:
        if self.skip_malformed_rows and line_number > 1:
          skipped.append(line_number)
          continue
        raise ValueError(f'{location}: expected {expected} tab-separated columns for GLUE '
                         f'{self.task} {split}, found {len(row)}: {line[:80]!r}')
      if self.has_header and line_number == 1:
        continue
      text_b = None
      if self.text_b_column is not None:
        text_b = self.process_text_fn(row[self.text_b_column].strip())
      examples.append(classifier_data_lib.InputExample(
          guid=f'{split}-{line_number}',
          text_a=self.process_text_fn(row[self.text_a_column].strip()),
          text_b=text_b,
          label=self._label(row[self.label_column], location)))
    self.skipped_rows[split] = len(skipped)
    if skipped:
      logging.warning('%s: skipped %d malformed rows (not %d columns), e.g. lines %s', path,
                      len(skipped), expected, skipped[:5])
    return examples


class ColaProcessor(GlueTsvProcessor):
  """CoLA: no header; `source, label, original judgement mark, sentence`; label 1 = acceptable."""
  task = 'cola'
  processor_name = 'COLA'
  labels = ('0', '1')
  has_header = False
  num_columns = {'train': 4, 'dev': 4}
  text_a_column = 3
  label_column = 1


class Sst2Processor(GlueTsvProcessor):
  """SST-2: `sentence, label`; label 1 = positive."""
  task = 'sst2'
  processor_name = 'SST-2'
  labels = ('0', '1')
  num_columns = {'train': 2, 'dev': 2}
  text_a_column = 0
  label_column = 1


class MrpcProcessor(GlueTsvProcessor):
  """MRPC: `Quality, #1 ID, #2 ID, #1 String, #2 String`; Quality 1 = paraphrase."""
  task = 'mrpc'
  processor_name = 'MRPC'
  labels = ('0', '1')
  num_columns = {'train': 5, 'dev': 5}
  text_a_column = 3
  text_b_column = 4
  label_column = 0


class QqpProcessor(GlueTsvProcessor):
  """QQP: `id, qid1, qid2, question1, question2, is_duplicate`; malformed rows are skipped."""
  task = 'qqp'
  processor_name = 'QQP'
  labels = ('0', '1')
  num_columns = {'train': 6, 'dev': 6}
  text_a_column = 3
  text_b_column = 4
  label_column = 5
  skip_malformed_rows = True


class MnliProcessor(GlueTsvProcessor):
  """MNLI (matched dev): premise `sentence1` (column 8), hypothesis `sentence2` (9), `gold_label`
  (last). Labels in TFDS order. (Model Garden's TFDS MNLI processor puts the hypothesis first.)
  """
  task = 'mnli'
  processor_name = 'MNLI'
  labels = ('entailment', 'neutral', 'contradiction')
  num_columns = {'train': 12, 'dev': 16}
  files = {'train': 'train.tsv', 'dev': 'dev_matched.tsv'}
  text_a_column = 8
  text_b_column = 9
  label_column = -1


class QnliProcessor(GlueTsvProcessor):
  """QNLI: `index, question, sentence, label`; string labels."""
  task = 'qnli'
  processor_name = 'QNLI'
  labels = ('entailment', 'not_entailment')
  num_columns = {'train': 4, 'dev': 4}
  text_a_column = 1
  text_b_column = 2
  label_column = 3


class RteProcessor(GlueTsvProcessor):
  """RTE: `index, sentence1, sentence2, label`; string labels."""
  task = 'rte'
  processor_name = 'RTE'
  labels = ('entailment', 'not_entailment')
  num_columns = {'train': 4, 'dev': 4}
  text_a_column = 1
  text_b_column = 2
  label_column = 3


class StsbProcessor(GlueTsvProcessor):
  """STS-B: 10 columns, `sentence1` (7), `sentence2` (8), float `score` (9) in [0, 5]."""
  task = 'stsb'
  processor_name = 'STS-B'
  num_columns = {'train': 10, 'dev': 10}
  text_a_column = 7
  text_b_column = 8
  label_column = 9

  def __init__(self, process_text_fn=mg_tokenization.convert_to_unicode):
    super().__init__(process_text_fn)
    # Read by generate_tf_record_from_data_file: float `label_ids`, no label list.
    self.is_regression = True
    self.label_type = float

  def _label(self, value, location):
    try:
      score = float(value)
    except ValueError:
      raise ValueError(f'{location}: STS-B score {value!r} is not a number.') from None
    if not 0.0 <= score <= 5.0:
      raise ValueError(f'{location}: STS-B score {score} is outside [0, 5].')
    return score


PROCESSORS = {processor.task: processor for processor in (
    ColaProcessor, Sst2Processor, MrpcProcessor, QqpProcessor, MnliProcessor, QnliProcessor,
    RteProcessor, StsbProcessor)}

# Model Garden's TFDS-backed GLUE processors and the TFDS dataset each one loads.
TFDS_PROCESSORS = {
    'cola': ('glue/cola', classifier_data_lib.ColaProcessor),
    'sst2': ('glue/sst2', classifier_data_lib.SstProcessor),
    'mrpc': ('glue/mrpc', classifier_data_lib.MrpcProcessor),
    'qqp': ('glue/qqp', classifier_data_lib.QqpProcessor),
    'mnli': ('glue/mnli', classifier_data_lib.MnliProcessor),
    'qnli': ('glue/qnli', classifier_data_lib.QnliProcessor),
    'rte': ('glue/rte', classifier_data_lib.RteProcessor),
    'stsb': ('glue/stsb', classifier_data_lib.StsBProcessor),
}


def _check_task(task):
  if task not in TASKS:
    raise ValueError(f'Unknown GLUE task {task!r}; use one of {", ".join(TASKS)}.')


def tsv_processor(task):
  """Returns the TSV processor for `task` (one of `TASKS`)."""
  _check_task(task)
  return PROCESSORS[task]()


def tfds_processor(task, tfds_name):
  """Returns Model Garden's TFDS processor for `task`, checking it reads `tfds_name`.

  The processor calls `tfds.load(tfds_name, try_gcs=True)`: the dataset must already be prepared in
  TFDS's data directory (`$TFDS_DATA_DIR`, default `~/tensorflow_datasets`); without it TFDS would
  try to download.
  """
  _check_task(task)
  expected, processor_cls = TFDS_PROCESSORS[task]
  if tfds_name != expected:
    raise ValueError(f'TFDS name {tfds_name!r} does not match task {task}: Model Garden\'s '
                     f'{processor_cls.__name__} reads {expected!r}.')
  builder = tfds.builder(tfds_name)
  if not builder.is_prepared():
    raise ValueError(f'TFDS dataset {tfds_name} is not prepared in {builder.data_dir}; download '
                     f'it first (e.g. `tfds build {tfds_name}` with internet access, then copy '
                     'the folder or set $TFDS_DATA_DIR).')
  return processor_cls()


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
    processor: a `classifier_data_lib.DataProcessor` (from this module, or Model Garden's TFDS one).
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
  return write_records(tsv_processor(task), source, check_vocabulary(vocab_file), lower_case,
                       max_seq_length, output_dir, task, source, max_train_examples, subset_seed,
                       heldout_examples)


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
