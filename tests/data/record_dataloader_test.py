"""Tests of the TFRecord input formats ('tfrecord', 'masked_tfrecord') and whole-word masking."""

import os

import numpy as np
import tensorflow as tf

from teams_tf.data import pretrain_dataloader

_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'on', 'mat', '.',
           'dog', '##s', 'ran', 'un', '##believ', '##able']
_SEQ_LENGTH = 12
_NUM_PREDICTIONS = 3


def _int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _write_records(path, examples):
  with tf.io.TFRecordWriter(path) as writer:
    for example in examples:
      features = {
          name: (tf.train.Feature(float_list=tf.train.FloatList(value=list(value)))
                 if name == 'masked_lm_weights' else _int_feature(value))
          for name, value in example.items()
      }
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=features)).SerializeToString())


def _unmasked(rng, length):
  """[CLS] A [SEP] B [SEP] with random ordinary tokens, padded to _SEQ_LENGTH."""
  split = length // 2
  ids = [2] + list(rng.integers(5, len(_TOKENS), split - 1)) + [3]
  ids += list(rng.integers(5, len(_TOKENS), length - split - 2)) + [3]
  segments = [0] * split + [1] * (length - split)
  pad = _SEQ_LENGTH - length
  return dict(input_ids=ids + [0] * pad, input_mask=[1] * length + [0] * pad,
              segment_ids=segments + [0] * pad)


def _as_numpy(dataset):
  return [{key: value.numpy() for key, value in batch.items()} for batch in dataset]


class RecordDataLoaderTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self._dir = self.get_temp_dir()
    self._vocab = os.path.join(self._dir, 'vocab.txt')
    with open(self._vocab, 'w') as f:
      f.write(''.join(t + '\n' for t in _TOKENS))
    rng = np.random.default_rng(0)
    self._sequences = [_unmasked(rng, length) for length in (12, 9, 12, 7, 11, 12)]
    self._files = []
    for i in range(2):
      path = os.path.join(self._dir, f'unmasked-{i}.tfrecord')
      _write_records(path, self._sequences[i * 3:(i + 1) * 3])
      self._files.append(path)

  def _config(self, **overrides):
    fields = dict(input_format='tfrecord', input_path=','.join(self._files),
                  vocab_file=self._vocab, seq_length=_SEQ_LENGTH,
                  max_predictions_per_seq=_NUM_PREDICTIONS, global_batch_size=2,
                  is_training=False, seed=5)
    return pretrain_dataloader.PretrainDataConfig(**(fields | overrides))

  def _load(self, config, input_context=None):
    return _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load(input_context))

  def test_unmasked_records_are_masked_dynamically_keeping_segments(self):
    batches = self._load(self._config())
    rows = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    # The two files are interleaved record by record.
    order = [0, 3, 1, 4, 2, 5]
    expected = {k: np.array([self._sequences[i][k] for i in order])
                for k in ('input_ids', 'input_mask', 'segment_ids')}
    self.assertAllEqual(expected['input_mask'], rows['input_mask'])
    self.assertAllEqual(expected['segment_ids'], rows['input_type_ids'])
    restored = rows['input_word_ids'].copy()
    for row in range(len(restored)):
      real = rows['masked_lm_weights'][row] > 0
      self.assertTrue(real.any())
      positions = rows['masked_lm_positions'][row][real]
      # Never special tokens or padding.
      self.assertTrue(np.all(expected['input_ids'][row][positions] >= 5))
      restored[row, positions] = rows['masked_lm_ids'][row][real]
    self.assertAllEqual(expected['input_ids'], restored)
    # Evaluation data: the same masks on every load.
    again = self._load(self._config())
    for first, second in zip(batches, again):
      for key in first:
        self.assertAllEqual(first[key], second[key])

  def test_all_formats_yield_the_same_features(self):
    masked_path = os.path.join(self._dir, 'masked.tfrecord')
    examples = []
    for batch in self._load(self._config()):
      for row in range(len(batch['input_word_ids'])):
        examples.append(dict(
            input_ids=batch['input_word_ids'][row], input_mask=batch['input_mask'][row],
            segment_ids=batch['input_type_ids'][row],
            masked_lm_positions=batch['masked_lm_positions'][row],
            masked_lm_ids=batch['masked_lm_ids'][row],
            masked_lm_weights=batch['masked_lm_weights'][row]))
    _write_records(masked_path, examples)
    masked = pretrain_dataloader.PretrainDataLoader(
        self._config(input_format='masked_tfrecord', input_path=masked_path)).load()
    unmasked = pretrain_dataloader.PretrainDataLoader(self._config()).load()
    text_path = os.path.join(self._dir, 'text.txt')
    with open(text_path, 'w') as f:
      f.write('the cat sat on the mat .\nthe dogs ran .\n' * 4)
    text = pretrain_dataloader.PretrainDataLoader(
        self._config(input_format='text', input_path=text_path)).load()
    self.assertEqual(unmasked.element_spec, masked.element_spec)
    self.assertEqual(unmasked.element_spec, text.element_spec)
    # Static records come back exactly as written.
    got = _as_numpy(masked)
    self.assertAllEqual(np.stack([e['masked_lm_positions'] for e in examples]),
                        np.concatenate([b['masked_lm_positions'] for b in got]))
    self.assertAllEqual(np.stack([e['input_ids'] for e in examples]),
                        np.concatenate([b['input_word_ids'] for b in got]))

  def test_pipelines_read_disjoint_files(self):
    seen = []
    for pipeline in range(2):
      context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                           num_replicas_in_sync=2)
      batches = self._load(self._config(global_batch_size=2), context)
      seen.append({tuple(row) for b in batches for row in b['input_mask']})
      self.assertLen(np.concatenate([b['input_mask'] for b in batches]), 3)
    self.assertEqual(set(), seen[0] & seen[1] - {tuple([1] * _SEQ_LENGTH)})

  def test_training_is_reproducible_for_a_seed(self):
    def first_batches(seed):
      config = self._config(is_training=True, seed=seed, shuffle_buffer_size=4)
      return _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load().take(4))
    for a, b in zip(first_batches(1), first_batches(1)):
      for key in a:
        self.assertAllEqual(a[key], b[key])

  def test_whole_word_masking_masks_every_piece_of_a_word(self):
    ids = {t: i for i, t in enumerate(_TOKENS)}
    words = [[ids['un'], ids['##believ'], ids['##able']], [ids['dog'], ids['##s']], [ids['cat']],
             [ids['sat']]]
    sequence = [2] + [i for w in words for i in w] + [3]
    path = os.path.join(self._dir, 'words.tfrecord')
    pad = _SEQ_LENGTH - len(sequence)
    _write_records(path, [dict(input_ids=sequence + [0] * pad,
                               input_mask=[1] * len(sequence) + [0] * pad,
                               segment_ids=[0] * _SEQ_LENGTH)] * 200)
    config = self._config(input_path=path, whole_word_masking=True, mask_rate=0.4,
                          max_predictions_per_seq=4, global_batch_size=200)
    batch = self._load(config)[0]
    word_spans = [(1, 4), (4, 6), (6, 7), (7, 8)]
    counts = np.zeros(len(words))
    for row in range(200):
      chosen = set(batch['masked_lm_positions'][row][batch['masked_lm_weights'][row] > 0])
      self.assertNotEmpty(chosen)
      self.assertLessEqual(len(chosen), 4)  # round(8 * 0.4) = 3 tokens budget; never more than P.
      for w, (start, end) in enumerate(word_spans):
        covered = set(range(start, end)) & chosen
        self.assertIn(len(covered), (0, end - start), f'row {row} splits word {w}')
        counts[w] += bool(covered)
    # Every word gets picked sometimes, including the 3-piece one.
    self.assertTrue(np.all(counts > 10), counts)

  def test_unknown_input_format(self):
    with self.assertRaisesRegex(ValueError, "input_format='tfrecords' is not one of"):
      pretrain_dataloader.PretrainDataLoader(self._config(input_format='tfrecords'))


if __name__ == '__main__':
  tf.test.main()
