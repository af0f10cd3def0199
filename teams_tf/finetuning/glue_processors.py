"""GLUE from its original TSV files as Model Garden `DataProcessor`s.

Model Garden 2.20's GLUE processors (`official.nlp.data.classifier_data_lib`) read only from TFDS.
The processors here read the `train.tsv` / `dev.tsv` files that GLUE's download script writes (MNLI:
`dev_matched.tsv`) and return `classifier_data_lib.InputExample`s, which `glue.write_records`
turns into TFRecords. Column layouts follow GLUE and BERT's `run_classifier.py`:

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

import os

from absl import logging
import tensorflow as tf
import tensorflow_datasets as tfds

from official.nlp.data import classifier_data_lib
from official.nlp.tools import tokenization as mg_tokenization

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
