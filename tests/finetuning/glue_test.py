"""GLUE TSV processors, TFRecords for Model Garden's sentence-prediction loader, GLUE metrics."""

import json
import os
import subprocess
import sys
from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from official.nlp.data import sentence_prediction_dataloader

from teams_tf.data import tokenization
from teams_tf.finetuning import glue
from teams_tf.finetuning import glue_metrics
from teams_tf.finetuning import glue_processors
from teams_tf.registry import finetune_experiments

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_SHARED_GLUE = os.path.join(_ROOT, '..', 'shared', 'data', 'glue')

# Small files in each task's original GLUE layout (header, column count, label strings, quirks).
_FIXTURES = {
    'sst2': {
        'train.tsv': ['sentence\tlabel',
                      'hide new secretions from the parental units \t0',
                      'that loves its characters \t1',
                      '" a quoted start , no closing quote \t1'],
        'dev.tsv': ['sentence\tlabel', "it 's a charming journey . \t1"],
    },
    'cola': {
        'train.tsv': ["gj04\t1\t\tOur friends won't buy this analysis.",
                      'gj04\t0\t*\tThey drank the pub.',
                      'cj99\t0\t?*\t"Mary said hello.'],
        'dev.tsv': ['clc95\t1\t \tThe book was read.'],  # No final newline, as in GLUE's dev.
    },
    'mrpc': {
        'train.tsv': ['\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String',
                      '1\t702876\t702977\tHe called " the witness " .\t'
                      'As " the witness " , he said .'],
        'dev.tsv': ['\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String',
                    '0\t1\t2\tShares rose .\tShares fell .'],
    },
    'qqp': {
        'train.tsv': ['id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate',
                      '1\t3\t4\tHow do I learn Python?\tWhat is the best way to learn Python?\t1',
                      '2\t5\t6\tWhy is the sky blue?\t0',  # Malformed: question2 missing.
                      '3\t7\t8\tWhat is 2+2?\tWhat is',  # Malformed: a question split over lines.
                      ' four?\t0',
                      '4\t9\t10\tIs tea healthy?\tIs coffee healthy?\t0'],
        'dev.tsv': ['id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate',
                    '5\t11\t12\tWhere is Paris?\tWhere is France?\t0'],
    },
    'mnli': {
        'train.tsv': ['\t'.join(['index', 'promptID', 'pairID', 'genre', 'sentence1_binary_parse',
                                 'sentence2_binary_parse', 'sentence1_parse', 'sentence2_parse',
                                 'sentence1', 'sentence2', 'label1', 'gold_label']),
                      '\t'.join(['0', '31193', '31193n', 'government', '( p )', '( h )', '(ROOT p)',
                                 '(ROOT h)', 'Cats sleep a lot.', 'Cats are lazy.', 'neutral',
                                 'neutral'])],
        'dev_matched.tsv': ['\t'.join(['index', 'promptID', 'pairID', 'genre',
                                       'sentence1_binary_parse', 'sentence2_binary_parse',
                                       'sentence1_parse', 'sentence2_parse', 'sentence1',
                                       'sentence2', 'label1', 'label2', 'label3', 'label4',
                                       'label5', 'gold_label']),
                            '\t'.join(['0', '63735', '63735n', 'slate', '( p )', '( h )',
                                       '(ROOT p)', '(ROOT h)', 'It rained.', 'It was dry.',
                                       'contradiction', 'contradiction', 'neutral',
                                       'contradiction', 'contradiction', 'contradiction'])],
    },
    'qnli': {
        'train.tsv': ['index\tquestion\tsentence\tlabel',
                      '0\tWhen did it open?\tIt opened in 1990.\tentailment'],
        'dev.tsv': ['index\tquestion\tsentence\tlabel',
                    '0\tWho wrote it?\tThe book is long.\tnot_entailment',
                    '1\tWhere is it?\tIt is in Rome.\tentailment'],
    },
    'rte': {
        'train.tsv': ['index\tsentence1\tsentence2\tlabel',
                      '0\tDogs bark loudly.\tDogs make noise.\tentailment'],
        'dev.tsv': ['index\tsentence1\tsentence2\tlabel',
                    '0\tA man sleeps.\tA man runs.\tnot_entailment'],
    },
    'stsb': {
        'train.tsv': ['index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t'
                      'sentence2\tscore',
                      '0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking '
                      'off.\tAn air plane is taking off.\t5.000',
                      '1\tmain-news\theadlines\t2013\t0002\tnone\tnone\tA cat plays.\tA man '
                      'sings.\t0.250'],
        'dev.tsv': ['index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t'
                    'sentence2\tscore',
                    '0\tmain-forums\tdeft\t2014\t0003\tnone\tnone\tIt is good.\tIt is fine.\t3.8'],
    },
}

# (text_a, text_b, label) expected from the fixtures, train then dev.
_EXPECTED = {
    'sst2': ([('hide new secretions from the parental units', None, '0'),
              ('that loves its characters', None, '1'),
              ('" a quoted start , no closing quote', None, '1')],
             [("it 's a charming journey .", None, '1')]),
    'cola': ([("Our friends won't buy this analysis.", None, '1'),
              ('They drank the pub.', None, '0'), ('"Mary said hello.', None, '0')],
             [('The book was read.', None, '1')]),
    'mrpc': ([('He called " the witness " .', 'As " the witness " , he said .', '1')],
             [('Shares rose .', 'Shares fell .', '0')]),
    'qqp': ([('How do I learn Python?', 'What is the best way to learn Python?', '1'),
             ('Is tea healthy?', 'Is coffee healthy?', '0')],
            [('Where is Paris?', 'Where is France?', '0')]),
    'mnli': ([('Cats sleep a lot.', 'Cats are lazy.', 'neutral')],
             [('It rained.', 'It was dry.', 'contradiction')]),
    'qnli': ([('When did it open?', 'It opened in 1990.', 'entailment')],
             [('Who wrote it?', 'The book is long.', 'not_entailment'),
              ('Where is it?', 'It is in Rome.', 'entailment')]),
    'rte': ([('Dogs bark loudly.', 'Dogs make noise.', 'entailment')],
            [('A man sleeps.', 'A man runs.', 'not_entailment')]),
    'stsb': ([('A plane is taking off.', 'An air plane is taking off.', 5.0),
              ('A cat plays.', 'A man sings.', 0.25)],
             [('It is good.', 'It is fine.', 3.8)]),
}

# A vocabulary whose special ids are neither BERT's nor the sample's: [UNK]=5 [SEP]=6 [CLS]=7.
_ODD_VOCAB = ['[PAD]', 'a', 'plane', 'is', 'taking', '[UNK]', '[SEP]', '[CLS]', '[MASK]', 'off',
              '.', 'an', 'air', 'it', 'good', 'fine', 'cat', 'plays', 'man', 'sings']


def write_fixture(directory, task):
  """Writes the task's fixture files into `directory`; returns it."""
  tf.io.gfile.makedirs(directory)
  for name, lines in _FIXTURES[task].items():
    text = '\n'.join(lines) + ('' if (task, name) == ('cola', 'dev.tsv') else '\n')
    with open(os.path.join(directory, name), 'w', encoding='utf-8') as f:
      f.write(text)
  return directory


def _triples(examples):
  return [(e.text_a, e.text_b, e.label) for e in examples]


def _load(path, seq_length, label_type='int', batch_size=8):
  config = sentence_prediction_dataloader.SentencePredictionDataConfig(
      input_path=path, seq_length=seq_length, global_batch_size=batch_size, is_training=False,
      drop_remainder=False, label_type=label_type, include_example_id=True)
  loader = sentence_prediction_dataloader.SentencePredictionDataLoader(config)
  return next(iter(loader.load()))


class GlueTsvProcessorTest(tf.test.TestCase, parameterized.TestCase):

  def test_tasks_are_the_registered_finetuning_tasks(self):
    self.assertCountEqual(finetune_experiments.GLUE_TASKS, glue_processors.TASKS)
    self.assertCountEqual(glue_processors.TASKS, glue_processors.PROCESSORS)
    self.assertCountEqual(glue_processors.TASKS, glue_metrics.TASK_METRICS)

  @parameterized.named_parameters(*[(task, task) for task in _FIXTURES])
  def test_fixture_layouts(self, task):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), task), task)
    processor = glue_processors.tsv_processor(task)
    train, dev = processor.get_train_examples(data_dir), processor.get_dev_examples(data_dir)
    self.assertEqual(_EXPECTED[task][0], _triples(train))
    self.assertEqual(_EXPECTED[task][1], _triples(dev))
    self.assertLen({e.guid for e in train}, len(train))
    if task == 'stsb':
      self.assertIsNone(processor.get_labels())
      self.assertTrue(processor.is_regression)
      self.assertIsInstance(train[0].label, float)
    else:
      self.assertContainsSubset({e.label for e in train + dev}, processor.get_labels())

  def test_qqp_skips_and_counts_malformed_rows(self):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), 'qqp'), 'qqp')
    processor = glue_processors.tsv_processor('qqp')
    self.assertLen(processor.get_train_examples(data_dir), 2)
    self.assertLen(processor.get_dev_examples(data_dir), 1)
    self.assertEqual({'train': 3, 'dev': 0}, processor.skipped_rows)

  def test_label_ids_follow_tfds_order(self):
    # TFDS glue/mnli ClassLabel names: entailment, neutral, contradiction.
    self.assertEqual(['entailment', 'neutral', 'contradiction'],
                     glue_processors.tsv_processor('mnli').get_labels())
    self.assertEqual(['entailment', 'not_entailment'],
                     glue_processors.tsv_processor('qnli').get_labels())

  @parameterized.named_parameters(
      ('too_few_columns', 'sst2', 'train.tsv', 'only one column', r'train\.tsv:5: expected 2'),
      ('too_many_columns', 'cola', 'dev.tsv', 'a\t1\t\tb\tc', r'dev\.tsv:2: expected 4 .*found 5'),
      ('unknown_label', 'qnli', 'dev.tsv', '2\tq?\ts.\tentails', r"dev\.tsv:4: label 'entails'"),
      ('bad_score', 'stsb', 'train.tsv', '2\tg\tf\ty\to\ts\ts\tA.\tB.\tfive',
       r"train\.tsv:4: STS-B score 'five'"),
      ('score_out_of_range', 'stsb', 'dev.tsv', '1\tg\tf\ty\to\ts\ts\tA.\tB.\t5.5',
       r'dev\.tsv:3: STS-B score 5.5 is outside'))
  def test_bad_rows_name_file_and_line(self, task, name, bad_line, message):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), task), task)
    with open(os.path.join(data_dir, name), 'a', encoding='utf-8') as f:
      f.write(('\n' if (task, name) == ('cola', 'dev.tsv') else '') + bad_line + '\n')
    processor = glue_processors.tsv_processor(task)
    read = processor.get_train_examples if name == 'train.tsv' else processor.get_dev_examples
    with self.assertRaisesRegex(ValueError, message):
      read(data_dir)

  def test_missing_file_and_unknown_task(self):
    with self.assertRaisesRegex(ValueError, r'train\.tsv does not exist'):
      glue_processors.tsv_processor('rte').get_train_examples(self.get_temp_dir())
    with self.assertRaisesRegex(ValueError, "Unknown GLUE task 'sst'"):
      glue_processors.tsv_processor('sst')

  @parameterized.named_parameters(
      ('sst2', 'SST-2', 'sst2', 67_349, 37_569, 872, 444),
      ('cola', 'CoLA', 'cola', 8_551, 6_023, 1_043, 721),
      ('stsb', 'STS-B', 'stsb', 5_749, None, 1_500, None))
  def test_shared_glue_files(self, folder, task, train_rows, train_ones, dev_rows, dev_ones):
    data_dir = os.path.join(_SHARED_GLUE, folder)
    if not os.path.isdir(data_dir):
      self.skipTest(f'{data_dir} not present')
    processor = glue_processors.tsv_processor(task)
    train, dev = processor.get_train_examples(data_dir), processor.get_dev_examples(data_dir)
    self.assertLen(train, train_rows)
    self.assertLen(dev, dev_rows)
    if train_ones is not None:
      self.assertEqual(train_ones, sum(e.label == '1' for e in train))
      self.assertEqual(dev_ones, sum(e.label == '1' for e in dev))
    else:
      self.assertBetween(min(e.label for e in train), 0.0, 5.0)
    self.assertFalse(any(e.text_a != e.text_a.strip() for e in train))

  def test_shared_qnli_dev(self):
    data_dir = os.path.join(_SHARED_GLUE, 'QNLI')
    if not os.path.isdir(data_dir):
      self.skipTest(f'{data_dir} not present')
    dev = glue_processors.tsv_processor('qnli').get_dev_examples(data_dir)
    self.assertLen(dev, 5_463)
    self.assertEqual(2_761, sum(e.label == 'not_entailment' for e in dev))


class GlueRecordsTest(tf.test.TestCase):

  def _odd_vocab(self):
    path = os.path.join(self.get_temp_dir(), 'odd_vocab.txt')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('\n'.join(_ODD_VOCAB) + '\n')
    return glue.check_vocabulary(path)

  def test_cli_records_load_through_model_garden_loader(self):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), 'SST-2'), 'sst2')
    output_dir = os.path.join(self.get_temp_dir(), 'records', 'sst2')
    result = subprocess.run(
        [sys.executable, 'tools/create_glue_data.py', '--task=sst2', f'--glue_dir={data_dir}',
         '--vocab_file=sample:vocab', '--lower_case', '--max_seq_length=16',
         f'--output_dir={output_dir}', '--max_train_examples=2', '--subset_seed=3'],
        cwd=_ROOT, capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(0, result.returncode, result.stderr[-3000:])
    self.assertIn('train: 2 examples (random subset of 3, seed 3)', result.stdout)
    self.assertCountEqual(['train.tfrecord', 'dev.tfrecord', 'meta_data.json'],
                          os.listdir(output_dir))  # No temporary files left behind.
    with open(os.path.join(output_dir, 'meta_data.json')) as f:
      meta = json.load(f)
    self.assertEqual(
        dict(task='sst2', train_data_size=2, eval_data_size=1, num_labels=2, max_seq_length=16,
             vocab_size=3660, train_examples_read=3),
        {key: meta[key] for key in ('task', 'train_data_size', 'eval_data_size', 'num_labels',
                                    'max_seq_length', 'vocab_size', 'train_examples_read')})

    # Expected ids from the pretraining tokenizer (tensorflow-text), independent of Model Garden's.
    vocab = tokenization.load_vocabulary('sample:vocab')
    self.assertEqual((0, 1, 2, 3), (vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id))
    tokenizer = tokenization.build_tokenizer(vocab, lower_case=True)
    batch = _load(os.path.join(output_dir, 'dev.tfrecord'), seq_length=16)
    text = "it 's a charming journey ."
    pieces = tokenizer.tokenize([text]).merge_dims(1, 2).to_list()[0]
    expected = [vocab.cls_id] + pieces + [vocab.sep_id]
    expected += [vocab.pad_id] * (16 - len(expected))
    self.assertEqual([1, 16], batch['input_word_ids'].shape.as_list())
    self.assertEqual(tf.int32, batch['input_word_ids'].dtype)
    self.assertEqual(expected, batch['input_word_ids'].numpy()[0].tolist())
    length = len(pieces) + 2
    self.assertEqual([1] * length + [0] * (16 - length), batch['input_mask'].numpy()[0].tolist())
    self.assertAllEqual(np.zeros([1, 16]), batch['input_type_ids'])
    self.assertEqual([1], batch['label_ids'].numpy().tolist())

    train = _load(os.path.join(output_dir, 'train.tfrecord'), seq_length=16)
    self.assertEqual([2, 16], train['input_word_ids'].shape.as_list())
    self.assertAllEqual([0, 1], train['example_id'])
    self.assertAllEqual(vocab.cls_id * np.ones(2), train['input_word_ids'][:, 0])

  def test_heldout_slice_leaves_train_and_keeps_its_labels(self):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), 'STS-B-slice'), 'stsb')
    everything = os.path.join(self.get_temp_dir(), 'stsb_all')
    glue.write_records(glue_processors.tsv_processor('stsb'), data_dir, self._odd_vocab(),
                       lower_case=True, max_seq_length=10, output_dir=everything, task='stsb',
                       source=data_dir)
    output_dir = os.path.join(self.get_temp_dir(), 'stsb_slice')
    meta, stats = glue.write_records(
        glue_processors.tsv_processor('stsb'), data_dir, self._odd_vocab(), lower_case=True,
        max_seq_length=10, output_dir=output_dir, task='stsb', source=data_dir,
        heldout_examples=1)
    all_labels = _load(os.path.join(everything, 'train.tfrecord'), seq_length=10,
                       label_type='float')['label_ids'].numpy().tolist()
    train = _load(os.path.join(output_dir, 'train.tfrecord'), seq_length=10, label_type='float')
    heldout = _load(os.path.join(output_dir, 'heldout.tfrecord'), seq_length=10,
                    label_type='float')
    self.assertEqual((len(all_labels) - 1, 1), (meta['train_data_size'],
                                                meta['heldout_data_size']))
    # Every train example is in exactly one of the two files, with its label.
    self.assertCountEqual(all_labels, train['label_ids'].numpy().tolist()
                          + heldout['label_ids'].numpy().tolist())
    self.assertIn('heldout: 1 examples -> heldout.tfrecord',
                  glue.conversion_summary(meta, stats, None))
    with self.assertRaisesRegex(ValueError, 'leaves no train example'):
      glue.write_records(glue_processors.tsv_processor('stsb'), data_dir, self._odd_vocab(),
                         lower_case=True, max_seq_length=10, output_dir=output_dir, task='stsb',
                         source=data_dir, heldout_examples=len(all_labels))

  def test_pairs_floats_and_truncation_with_an_odd_vocabulary(self):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), 'STS-B'), 'stsb')
    output_dir = os.path.join(self.get_temp_dir(), 'stsb')
    meta, stats = glue.write_records(
        glue_processors.tsv_processor('stsb'), data_dir, self._odd_vocab(), lower_case=True,
        max_seq_length=10, output_dir=output_dir, task='stsb', source=data_dir)
    self.assertEqual(1, meta['num_labels'])
    self.assertEqual({'pad': 0, 'unk': 5, 'cls': 7, 'sep': 6}, meta['special_ids'])
    batch = _load(os.path.join(output_dir, 'train.tfrecord'), seq_length=10, label_type='float')
    sep, cls = 6, 7
    # 'a plane is taking off .' (6 pieces) + 'an air plane is taking off .' (7) must fit in
    # 10 - 3 = 7: one piece at a time is dropped from the end of the longer text (b on ties),
    # leaving 4 + 3.
    self.assertEqual([cls, 1, 2, 3, 4, sep, 11, 12, 2, sep],
                     batch['input_word_ids'][0].numpy().tolist())
    self.assertEqual([0] * 6 + [1] * 4, batch['input_type_ids'][0].numpy().tolist())
    # 'a cat plays .' / 'a man sings .' (4 + 4): text b loses its '.'.
    self.assertEqual([cls, 1, 16, 17, 10, sep, 1, 18, 19, sep],
                     batch['input_word_ids'][1].numpy().tolist())
    self.assertAllClose([5.0, 0.25], batch['label_ids'])
    self.assertEqual(tf.float32, batch['label_ids'].dtype)
    # What standardized regression targets are scaled by: the train scores' mean and std.
    self.assertAllClose((2.625, 2.375), (meta['train_label_mean'], meta['train_label_std']))
    dev = _load(os.path.join(output_dir, 'dev.tfrecord'), seq_length=10, label_type='float')
    self.assertEqual([cls, 13, 3, 14, 10, sep, 13, 3, 15, sep],
                     dev['input_word_ids'][0].numpy().tolist())
    self.assertEqual({'train': 2, 'dev': 1}, dict(stats.full_length))

  def test_padding_is_pad_id_with_an_odd_vocabulary(self):
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), 'RTE'), 'rte')
    output_dir = os.path.join(self.get_temp_dir(), 'rte')
    glue.write_records(glue_processors.tsv_processor('rte'), data_dir, self._odd_vocab(), True, 12,
                       output_dir, 'rte', data_dir)
    batch = _load(os.path.join(output_dir, 'dev.tfrecord'), seq_length=12)
    # 'a man sleeps .' / 'a man runs .': 'sleeps' and 'runs' are [UNK] (5); [PAD] (0) after.
    self.assertEqual([7, 1, 18, 5, 10, 6, 1, 18, 5, 10, 6, 0],
                     batch['input_word_ids'][0].numpy().tolist())
    self.assertEqual([1] * 11 + [0], batch['input_mask'][0].numpy().tolist())
    self.assertEqual([1], batch['label_ids'].numpy().tolist())  # not_entailment

  def test_bert_vocabulary_ids(self):
    bert_vocab = os.path.join(_SHARED_GLUE, '..', 'vocab', 'bert_uncased_vocab.txt')
    if not os.path.exists(bert_vocab):
      self.skipTest(f'{bert_vocab} not present')
    data_dir = write_fixture(os.path.join(self.get_temp_dir(), 'QNLI'), 'qnli')
    output_dir = os.path.join(self.get_temp_dir(), 'qnli_bert')
    glue.write_records(glue_processors.tsv_processor('qnli'), data_dir,
                       glue.check_vocabulary(bert_vocab), True, 24, output_dir, 'qnli', data_dir)
    ids = _load(os.path.join(output_dir, 'dev.tfrecord'), seq_length=24)['input_word_ids'][0]
    ids = ids.numpy().tolist()
    # [CLS] = 101 first, two [SEP] = 102, [PAD] = 0 after them, no [UNK] = 100.
    self.assertEqual(101, ids[0])
    first_sep, second_sep = [i for i, token in enumerate(ids) if token == 102]
    self.assertEqual([0] * (23 - second_sep), ids[second_sep + 1:])
    self.assertNotIn(100, ids)
    self.assertLess(first_sep, second_sep)

  def test_pad_must_be_id_zero(self):
    path = os.path.join(self.get_temp_dir(), 'pad_last.txt')
    with open(path, 'w', encoding='utf-8') as f:
      f.write('\n'.join(_ODD_VOCAB[1:] + ['[PAD]']) + '\n')
    with self.assertRaisesRegex(ValueError, r'\[PAD\] at id 19, .* pads input_ids with 0'):
      glue.check_vocabulary(path)

  def test_tfds_source_through_model_garden_processor(self):
    def as_dataset(self, split, *args, **kwargs):
      del self, args, kwargs
      rows = {'train': ([1, 0], [1, 0], [b'a plane is good', b'it is fine']),
              'validation': ([0], [0], [b'a cat plays'])}[split]
      return tf.data.Dataset.from_tensor_slices(
          {'idx': rows[0], 'label': rows[1], 'sentence': rows[2]})

    output_dir = os.path.join(self.get_temp_dir(), 'tfds_sst2')
    with tfds.testing.mock_data(as_dataset_fn=as_dataset), mock.patch.object(
        tfds.core.DatasetBuilder, 'is_prepared', return_value=True):
      processor = glue_processors.tfds_processor('sst2', 'glue/sst2')
      meta, _ = glue.write_records(processor, None, self._odd_vocab(), True, 8, output_dir,
                                   'sst2', 'tfds:glue/sst2')
    self.assertEqual((2, 1, 2), (meta['train_data_size'], meta['eval_data_size'],
                                 meta['num_labels']))
    batch = _load(os.path.join(output_dir, 'train.tfrecord'), seq_length=8)
    # Model Garden's processor sorts by idx: 'it is fine' (idx 0, label 0) comes first.
    self.assertEqual([7, 13, 3, 15, 6, 0, 0, 0], batch['input_word_ids'][0].numpy().tolist())
    self.assertAllEqual([0, 1], batch['label_ids'])

  def test_tfds_name_must_match_task(self):
    with self.assertRaisesRegex(ValueError, "SstProcessor reads 'glue/sst2'"):
      glue_processors.tfds_processor('sst2', 'glue/cola')


class GlueMetricsTest(tf.test.TestCase, parameterized.TestCase):
  # Binary case by hand: TP = 4 (rows 0, 4, 6, 7), FP = 1 (row 1), FN = 1 (row 5), TN = 2.
  _PREDICTIONS = [1, 1, 0, 0, 1, 0, 1, 1]
  _LABELS = [1, 0, 0, 0, 1, 1, 1, 1]

  def test_binary_accuracy_f1_mcc(self):
    self.assertAllClose(6 / 8, glue_metrics.accuracy(self._PREDICTIONS, self._LABELS))
    # precision = recall = 4 / 5.
    self.assertAllClose(0.8, glue_metrics.f1(self._PREDICTIONS, self._LABELS))
    # (TP TN - FP FN) / sqrt((TP + FP)(TP + FN)(TN + FP)(TN + FN)) = (8 - 1) / sqrt(5 5 3 3).
    self.assertAllClose(7 / 15, glue_metrics.matthews_corrcoef(self._PREDICTIONS, self._LABELS))

  def test_three_class_mcc(self):
    # Confusion (rows true, columns predicted) [[3, 1, 0], [0, 2, 1], [1, 0, 2]]: N = 10, 7
    # correct, true and predicted counts both (4, 3, 3): (7 * 10 - 34) / (100 - 34) = 36 / 66.
    pairs = ([(0, 0)] * 3 + [(0, 1)] + [(1, 1)] * 2 + [(1, 2)] + [(2, 0)] + [(2, 2)] * 2)
    labels, predictions = zip(*pairs)
    self.assertAllClose(36 / 66, glue_metrics.matthews_corrcoef(predictions, labels))
    self.assertAllClose(0.7, glue_metrics.accuracy(predictions, labels))

  def test_degenerate_mcc_and_f1_are_zero(self):
    self.assertEqual(0.0, glue_metrics.matthews_corrcoef([1, 1, 1], [0, 1, 1]))
    self.assertEqual(0.0, glue_metrics.f1([0, 0], [0, 0]))

  def test_correlations(self):
    predictions, labels = [1, 2, 3, 4, 5], [1, 3, 2, 5, 10]
    # Ranks of labels (1, 3, 2, 4, 5): d = (0, -1, 1, 0, 0), 1 - 6 * 2 / (5 * 24) = 0.9.
    self.assertAllClose(0.9, glue_metrics.spearman(predictions, labels))
    # Deviations (-2, -1, 0, 1, 2) and (-3.2, -1.2, -2.2, 0.8, 5.8): 20 / sqrt(10 * 50.8).
    pearson = 20 / np.sqrt(10 * 50.8)
    self.assertAllClose(pearson, glue_metrics.pearson(predictions, labels))
    self.assertAllClose((pearson + 0.9) / 2,
                        glue_metrics.pearson_spearman_corr(predictions, labels))

  def test_spearman_averages_tied_ranks(self):
    # Ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5).
    self.assertAllClose(4.5 / np.sqrt(22.5), glue_metrics.spearman([1, 2, 2, 3], [1, 2, 3, 4]))

  def test_constant_predictions_give_nan_correlation(self):
    self.assertTrue(np.isnan(glue_metrics.pearson([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])))
    self.assertTrue(np.isnan(glue_metrics.spearman([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])))

  @parameterized.named_parameters(
      ('cola', 'cola', ['matthews_corrcoef', 'accuracy']),
      ('mrpc', 'mrpc', ['accuracy', 'f1']),
      ('qqp', 'qqp', ['accuracy', 'f1']),
      ('stsb', 'stsb', ['spearman', 'pearson', 'pearson_spearman_corr']),
      ('rte', 'rte', ['accuracy']))
  def test_compute_per_task(self, task, names):
    result = glue_metrics.compute(task, self._PREDICTIONS, self._LABELS)
    self.assertEqual(names, list(result))
    self.assertEqual(names[0], glue_metrics.headline_metric(task))
    if task == 'mrpc':
      self.assertAllClose({'accuracy': 0.75, 'f1': 0.8}, result)

  @parameterized.named_parameters(('sst2', 'sst2', 2), ('cola', 'cola', 2), ('mnli', 'mnli', 3),
                                  ('stsb', 'stsb', None))
  def test_resampled_headlines_are_the_metric_of_each_resample(self, task, classes):
    rng = np.random.default_rng(5)
    if classes:
      labels = rng.integers(0, classes, 60)
      predictions = np.where(rng.random(60) < 0.7, labels, rng.integers(0, classes, 60))
    else:
      labels = np.round(rng.uniform(0, 5, 60), 1)  # Ties, which Spearman ranks on average.
      predictions = labels + rng.normal(size=60)
    result = dict(dev_predictions=glue_metrics.encode_outputs(task, predictions),
                  dev_labels=glue_metrics.encode_outputs(task, labels))
    indices = rng.integers(0, 60, (5, 60))
    indices[4] = np.where(labels == labels[0])[0][0]  # One example: an undefined metric.
    expected = [glue_metrics.compute(task, glue_metrics.decode_outputs(result['dev_predictions'])[
        row], glue_metrics.decode_outputs(result['dev_labels'])[row])[
            glue_metrics.headline_metric(task)] for row in indices]
    expected = np.nan_to_num(expected, nan=0.0)
    self.assertAllClose(expected, glue_metrics.resampled_headlines(task, result, indices),
                        atol=1e-9)

  def test_rejects_mismatched_lengths(self):
    with self.assertRaisesRegex(ValueError, '3 predictions and 2 labels'):
      glue_metrics.accuracy([1, 0, 1], [1, 0])


if __name__ == '__main__':
  tf.test.main()
