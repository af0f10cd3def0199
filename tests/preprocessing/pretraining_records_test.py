"""Tests for teams_tf.preprocessing.pretraining_records: layout, Model Garden reading, determinism,
failures."""

import collections
import glob
import json
import os
from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from official.nlp.data import pretrain_dataloader

from teams_tf.data import corpus
from teams_tf.data import pretrain_dataloader as teams_pretrain_dataloader
from teams_tf.data import tokenization
from teams_tf.preprocessing import pretraining_records
from teams_tf.preprocessing import record_format

_SEQ_LENGTH = 16
_NUM_PREDICTIONS = 4
_PAD, _UNK, _CLS, _SEP, _MASK = 0, 1, 2, 3, 4
_NUM_DOCUMENTS = 4
_WORDS_PER_DOCUMENT = 12
_WHITESPACE_LINES = 'whitespace-only lines (treated as blank)'
_INVALID_UTF8 = 'invalid UTF-8 lines (U+FFFD)'
_CONTROL_CHARS = 'lines with control characters (replaced by spaces)'


def _word(document, i):
  return f'd{document}w{i}'


def _document_text(document):
  """Paragraph lines of one document: 4-word sentences of the document's own words."""
  rng = np.random.default_rng(document)
  lines = []
  for _ in range(3):
    sentences = []
    for _ in range(rng.integers(1, 4)):
      words = [_word(document, i) for i in rng.integers(0, _WORDS_PER_DOCUMENT, 4)]
      sentences.append(' '.join(words).capitalize() + '.')
    lines.append(' '.join(sentences))
  return '\n'.join(lines)


class PretrainingRecordsTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = self.get_temp_dir()
    words = [_word(d, i) for d in range(_NUM_DOCUMENTS) for i in range(_WORDS_PER_DOCUMENT)]
    # '##s' (the last id) lets the whole-word-masking test write words of two pieces.
    self.vocab_file = self._write('vocab.txt', '\n'.join(
        list(tokenization.SPECIAL_TOKENS) + ['.'] + words + ['##s']) + '\n')
    self.vocab_size = len(words) + 7
    self.document_of_id = {6 + i: i // _WORDS_PER_DOCUMENT for i in range(len(words))}
    # Two files of two blank-line-separated documents each.
    self.files = [self._write(f'corpus-{f}.txt',
                              f'{_document_text(2 * f)}\n\n{_document_text(2 * f + 1)}\n')
                  for f in range(2)]

  def _write(self, name, content):
    path = os.path.join(self.dir, name)
    with open(path, 'wb') as f:
      f.write(content.encode('utf-8') if isinstance(content, str) else content)
    return path

  def _options(self, **overrides):
    defaults = dict(vocab_file=self.vocab_file, seq_length=_SEQ_LENGTH, output_kind='unmasked',
                    dupe_factor=3, max_predictions_per_seq=_NUM_PREDICTIONS, seed=1)
    return record_format.RecordOptions(**(defaults | overrides))

  def _create(self, output='out', inputs=None, num_workers=1, num_shards=3, **overrides):
    source = corpus.CorpusSource(input_patterns=','.join(inputs or self.files))
    options = self._options(**overrides)
    output_dir = os.path.join(self.dir, output)
    summary = pretraining_records.create_pretraining_data(
        source, options, output_dir, num_shards=num_shards, num_workers=num_workers)
    return summary, self._records(output_dir, options), output_dir

  def _records(self, output_dir, options):
    spec = record_format.feature_spec(options)
    files = sorted(glob.glob(os.path.join(output_dir, 'pretrain-*-of-*.tfrecord')))
    dataset = tf.data.TFRecordDataset(files).map(lambda r: tf.io.parse_single_example(r, spec))
    return list(dataset.as_numpy_iterator())

  def _teams_loader(self, input_format, input_path):
    config = teams_pretrain_dataloader.PretrainDataConfig(
        input_format=input_format, input_path=input_path, vocab_file=self.vocab_file,
        seq_length=_SEQ_LENGTH, max_predictions_per_seq=_NUM_PREDICTIONS, global_batch_size=4,
        is_training=False, drop_remainder=False)
    return teams_pretrain_dataloader.PretrainDataLoader(config).load()

  def _corpus_tokens(self):
    ids = {token: i for i, token in enumerate(tokenization.load_vocabulary(self.vocab_file).tokens)}
    return sorted(ids[w.strip('.').lower()] if w.strip('.') else ids['.']
                  for path in self.files for w in open(path).read().replace('.', ' . ').split())

  def test_unmasked_layout_documents_and_segments(self):
    summary, records, output_dir = self._create()
    self.assertEqual(sorted(os.listdir(output_dir)), [
        'pretrain-00000-of-00003.tfrecord', 'pretrain-00001-of-00003.tfrecord',
        'pretrain-00002-of-00003.tfrecord', 'pretrain-summary.json'])
    self.assertLen(records, summary['counts']['sequences'])
    tokens = []
    for record in records:
      ids, mask, segments = record['input_ids'], record['input_mask'], record['segment_ids']
      self.assertEqual(ids.shape, (_SEQ_LENGTH,))
      length = int(mask.sum())
      self.assertAllEqual(mask, np.arange(_SEQ_LENGTH) < length)
      self.assertEqual(ids[0], _CLS)
      self.assertAllEqual(ids[length:], np.full(_SEQ_LENGTH - length, _PAD))
      seps = np.flatnonzero(ids == _SEP)
      self.assertIn(len(seps), (1, 2))
      self.assertEqual(seps[-1], length - 1)
      # [CLS] A [SEP] -> 0, B [SEP] -> 1, padding -> 0.
      expected_segments = (np.arange(_SEQ_LENGTH) > seps[0]) & (np.arange(_SEQ_LENGTH) < length)
      self.assertAllEqual(segments, expected_segments.astype(np.int64))
      body = [t for t in ids[:length] if t not in (_CLS, _SEP)]
      self.assertNotEmpty(body)
      self.assertLen({self.document_of_id[t] for t in body if t in self.document_of_id}, 1)
      tokens.extend(body)
    # Every corpus token lands in exactly one sequence.
    self.assertEqual(sorted(tokens), self._corpus_tokens())
    counts = summary['counts']
    self.assertEqual((counts['files'], counts['documents'], counts['tokens'], counts['unk_tokens']),
                     (2, 4, len(tokens), 0))
    self.assertGreater(counts['two_segment_sequences'], 0)
    with open(os.path.join(output_dir, 'pretrain-summary.json')) as f:
      self.assertEqual(json.load(f), summary)
    self.assertEqual(summary['features']['input_ids'], 'int64[16]')

  def test_unmasked_records_through_teams_loader(self):
    _, records, output_dir = self._create()
    dataset = self._teams_loader('tfrecord', os.path.join(output_dir, 'pretrain-*-of-*.tfrecord'))
    examples = [{k: v[i] for k, v in batch.items()}
                for batch in dataset.as_numpy_iterator() for i in range(len(batch['input_mask']))]
    self.assertEqual(len(examples), len(records))
    self.assertCountEqual([e['input_type_ids'].tobytes() for e in examples],
                          [r['segment_ids'].astype(np.int32).tobytes() for r in records])

  @parameterized.named_parameters(
      ('longer_records', dict(), dict(seq_length=12),
       r'records of .*pretrain-summary\.json hold seq_length=16, but task\.validation_data\.'
       r'seq_length=12: set task\.validation_data\.seq_length=16 .*--seq_length=12\.$'),
      ('other_predictions', dict(output_kind='masked'), dict(max_predictions_per_seq=3),
       r'hold max_predictions_per_seq=4, but task\.validation_data\.max_predictions_per_seq=3'),
      ('masked_read_as_unmasked', dict(output_kind='masked'), dict(input_format='tfrecord'),
       r'describes masked records, which task\.validation_data\.input_format=\'tfrecord\' '
       r'cannot read: set task\.validation_data\.input_format=masked_tfrecord'),
      ('other_vocabulary', dict(), dict(vocab_file='sample:vocab'),
       r'written with the vocabulary .*vocab\.txt \(55 tokens\), not task\.validation_data\.'
       r'vocab_file=.*sample.*\(3660 tokens\)'),
  )
  def test_records_that_do_not_fit_the_config_are_a_one_line_error(self, records, config,
                                                                   error):
    _, _, output_dir = self._create(**records)
    fields = dict(input_format='masked_tfrecord' if records else 'tfrecord',
                  input_path=os.path.join(output_dir, 'pretrain-*-of-*.tfrecord'),
                  vocab_file=self.vocab_file, seq_length=_SEQ_LENGTH,
                  max_predictions_per_seq=_NUM_PREDICTIONS, global_batch_size=4,
                  is_training=False)
    with self.assertRaisesRegex(ValueError, error) as raised:
      teams_pretrain_dataloader.PretrainDataLoader(
          teams_pretrain_dataloader.PretrainDataConfig(**(fields | config)))
    self.assertNotIn('\n', str(raised.exception))

  def test_one_segment(self):
    _, records, _ = self._create(num_segments=1)
    for record in records:
      self.assertAllEqual(record['segment_ids'], np.zeros(_SEQ_LENGTH))
      self.assertEqual(np.sum(record['input_ids'] == _SEP), 1)

  def test_masked_records_through_model_garden_loader(self):
    summary, _, output_dir = self._create(output_kind='masked')
    _, unmasked, _ = self._create(output='unmasked')
    config = pretrain_dataloader.BertPretrainDataConfig(
        input_path=os.path.join(output_dir, 'pretrain-*-of-*.tfrecord'), global_batch_size=4,
        is_training=False, seq_length=_SEQ_LENGTH, max_predictions_per_seq=_NUM_PREDICTIONS,
        use_next_sentence_label=False, drop_remainder=False)
    dataset = pretrain_dataloader.BertPretrainDataLoader(config).load()
    # The features of teams_tf's dynamic path on the same text.
    text = self._teams_loader('text', ','.join(self.files))
    self.assertEqual({k: (v.dtype, v.shape[1:]) for k, v in dataset.element_spec.items()},
                     {k: (v.dtype, v.shape[1:]) for k, v in text.element_spec.items()})
    batches = list(dataset.as_numpy_iterator())
    examples = [{k: v[i] for k, v in batch.items()}
                for batch in batches for i in range(len(batch['input_mask']))]
    self.assertEqual(len(examples), 3 * len(unmasked))
    self.assertEqual(summary['records'], len(examples))

    # Undoing the masking gives back each unmasked sequence exactly dupe_factor times.
    copies = collections.defaultdict(list)
    for example in examples:
      ids = example['input_word_ids'].copy()
      num = int(example['masked_lm_weights'].sum())
      self.assertGreater(num, 0)
      positions = example['masked_lm_positions'][:num]
      self.assertTrue(np.all(example['masked_lm_weights'][num:] == 0))
      self.assertTrue(np.all(np.isin(ids[positions], [_MASK] + list(range(5, self.vocab_size)))))
      ids[positions] = example['masked_lm_ids'][:num]
      copies[ids.tobytes()].append(tuple(positions))
    self.assertEqual(sorted(copies),
                     sorted(r['input_ids'].astype(np.int32).tobytes() for r in unmasked))
    self.assertTrue(all(len(c) == 3 for c in copies.values()))
    # The copies of a sequence are masked differently (given enough tokens to choose from).
    long_ones = [c for key, c in copies.items()
                 if np.count_nonzero(np.frombuffer(key, np.int32) > 4) >= 8]
    self.assertNotEmpty(long_ones)
    for positions in long_ones:
      self.assertGreater(len(set(positions)), 1)

  def test_same_seed_same_bytes_for_any_number_of_workers(self):
    _, _, one = self._create(output='one', output_kind='masked')
    _, _, two = self._create(output='two', output_kind='masked', num_workers=2)
    _, _, other_seed = self._create(output='other', output_kind='masked', seed=2)
    for name in sorted(os.listdir(one)):
      with open(os.path.join(one, name), 'rb') as a, open(os.path.join(two, name), 'rb') as b:
        self.assertEqual(a.read(), b.read(), name)
    with open(os.path.join(one, 'pretrain-00000-of-00003.tfrecord'), 'rb') as a, open(
        os.path.join(other_seed, 'pretrain-00000-of-00003.tfrecord'), 'rb') as b:
      self.assertNotEqual(a.read(), b.read())

  @parameterized.named_parameters(('whole_words', True), ('tokens', False))
  def test_whole_word_masking(self, whole_word_masking):
    # Every word is 'd0w<i>' + '##s': two pieces.
    text = ' '.join(f'D0w{i}s d0w{i + 1}s.' for i in range(0, 12, 2))
    path = self._write('plural.txt', text + '\n')
    summary, records, _ = self._create(inputs=[path], output_kind='masked', dupe_factor=20,
                                       whole_word_masking=whole_word_masking)
    self.assertEqual(summary['options']['whole_word_masking'], whole_word_masking)
    suffix_id = self.vocab_size - 1
    split_words = 0
    for record in records:
      num = int(record['masked_lm_weights'].sum())
      positions = record['masked_lm_positions'][:num]
      ids = record['input_ids'].copy()
      ids[positions] = record['masked_lm_ids'][:num]
      for position in positions:
        if ids[position] == suffix_id:
          split_words += position - 1 not in positions
        elif ids[position + 1] == suffix_id:
          split_words += position + 1 not in positions
    if whole_word_masking:
      self.assertEqual(split_words, 0)
    else:
      self.assertGreater(split_words, 0)

  def test_tfds_input(self):
    def as_dataset(self, *args, **kwargs):
      del self, args, kwargs
      return tf.data.Dataset.from_tensor_slices({'text': [_document_text(d) for d in range(3)]})

    source = corpus.CorpusSource(tfds_name='lm1b', tfds_split='train')
    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
      summary = pretraining_records.create_pretraining_data(
          source, self._options(), os.path.join(self.dir, 'tfds'), num_shards=2)
    self.assertEqual(summary['counts']['documents'], 3)
    self.assertEqual(summary['source']['tfds_name'], 'lm1b')

  @parameterized.named_parameters(
      ('empty_file', b'', 'skipped', 'empty files', 0),
      ('whitespace_lines', b'D0w1 d0w2.\n \t \nD1w1.\n', 'repaired', _WHITESPACE_LINES, 0),
      # One bad line of eleven: damaged text, not a binary file; the damaged word becomes [UNK].
      ('invalid_utf8', b'D0w1 \xff d0w2.\n' + b'D1w1.\n' * 10, 'repaired', _INVALID_UTF8, 1),
      # The spaces that replace control characters split words, as tensorflow-text does: no [UNK].
      ('control_chars', b'D0w1\x07d0w2\x1b.\n', 'repaired', _CONTROL_CHARS, 0),
      ('binary_file', b'\x00\x01\x02binary', 'skipped', 'binary files', 0),
      ('long_line', (' '.join(['d0w1'] * 40) + '.\n').encode(), 'counts',
       'long_sentences_split', 0))
  def test_bad_input(self, content, group, key, unk_tokens):
    bad = self._write('bad.txt', content)
    summary, records, _ = self._create(inputs=[self.files[0], bad])
    self.assertEqual(summary[group][key], 1)
    self.assertEqual(summary['counts']['unk_tokens'], unk_tokens)
    self.assertNotEmpty(records)
    for record in records:
      self.assertEqual(record['input_ids'].shape, (_SEQ_LENGTH,))

  def test_only_bad_input_is_an_error_that_writes_nothing(self):
    empty = self._write('empty.txt', b'')
    with self.assertRaisesRegex(ValueError, 'no text to pack'):
      self._create(output='never_made', inputs=[empty])
    self.assertFalse(os.path.exists(os.path.join(self.dir, 'never_made')))

  def test_a_failed_overwrite_keeps_the_earlier_outputs(self):
    _, records, output_dir = self._create(output='kept')
    before = sorted(os.listdir(output_dir))
    empty = self._write('empty.txt', b'')
    with self.assertRaisesRegex(ValueError, 'no text to pack'):
      pretraining_records.create_pretraining_data(
          corpus.CorpusSource(input_patterns=empty), self._options(), output_dir, num_shards=3,
          num_workers=1, overwrite=True)
    self.assertEqual(before, sorted(os.listdir(output_dir)))
    self.assertLen(self._records(output_dir, self._options()), len(records))

  @parameterized.named_parameters(
      ('missing', None, 'does not exist'),
      ('no_mask_token', '[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n',
       r'lacks the special token\(s\) \[MASK\]'))
  def test_bad_vocabulary(self, content, error):
    path = os.path.join(self.dir, 'bad_vocab.txt')
    if content is not None:
      self._write('bad_vocab.txt', content)
    with self.assertRaisesRegex(ValueError, error):
      self._create(vocab_file=path)
    self.assertFalse(os.path.exists(os.path.join(self.dir, 'out')))

  @parameterized.named_parameters(
      ('kind', dict(output_kind='both'), "output_kind='both'"),
      ('dupe', dict(output_kind='masked', dupe_factor=0), 'dupe_factor=0'),
      ('predictions', dict(output_kind='masked', max_predictions_per_seq=15),
       'max_predictions_per_seq=15'),
      ('rates', dict(output_kind='masked', mask_token_rate=0.95), 'mask_token_rate'))
  def test_bad_options(self, overrides, error):
    with self.assertRaisesRegex(ValueError, error):
      self._create(**overrides)

  def test_masking_options_of_unmasked_output_are_refused(self):
    given = ['seed', 'mask_rate', 'dupe_factor']
    with self.assertRaisesRegex(ValueError, '^--dupe_factor, --mask_rate only apply to '
                                '--output_kind=masked;'):
      record_format.check_masking_options('unmasked', given)
    record_format.check_masking_options('masked', given)
    record_format.check_masking_options('unmasked', ['seed', 'seq_length'])

  def test_existing_outputs_need_overwrite(self):
    _, _, output_dir = self._create()
    with self.assertRaisesRegex(ValueError, 'already holds 4 output file.*--overwrite'):
      self._create()
    source = corpus.CorpusSource(input_patterns=self.files[0])
    pretraining_records.create_pretraining_data(source, self._options(), output_dir, num_shards=2,
                                                overwrite=True)
    self.assertLen(glob.glob(os.path.join(output_dir, 'pretrain-*')), 3)  # 2 shards + summary.

  def test_failure_mid_run_leaves_no_incomplete_final_shard(self):
    _, _, good_dir = self._create(output='good', output_kind='masked')
    real_writer = tf.io.TFRecordWriter
    records_per_shard = len(self._records(good_dir, self._options(output_kind='masked'))) // 3

    class FailingWriter:
      """Writes the first shard, then fails after 2 records of the second."""
      created = 0

      def __init__(self, path):
        FailingWriter.created += 1
        self._writer = real_writer(path)
        self._written = 0
        self._fail = FailingWriter.created == 2

      def write(self, record):
        if self._fail and self._written == 2:
          raise IOError('disk full (simulated)')
        self._writer.write(record)
        self._written += 1

      def close(self):
        self._writer.close()

    self.assertGreater(records_per_shard, 2)
    with mock.patch.object(tf.io, 'TFRecordWriter', FailingWriter), \
        self.assertRaisesRegex(IOError, 'simulated'):
      self._create(output='failed', output_kind='masked')
    failed_dir = os.path.join(self.dir, 'failed')
    # Only the complete first shard has a final name; no temporary file, no summary.
    self.assertEqual(os.listdir(failed_dir), ['pretrain-00000-of-00003.tfrecord'])
    with open(os.path.join(failed_dir, 'pretrain-00000-of-00003.tfrecord'), 'rb') as a, open(
        os.path.join(good_dir, 'pretrain-00000-of-00003.tfrecord'), 'rb') as b:
      self.assertEqual(a.read(), b.read())


if __name__ == '__main__':
  tf.test.main()
