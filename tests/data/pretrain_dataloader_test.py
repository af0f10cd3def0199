"""Tests for teams_tf.data.pretrain_dataloader: the raw-text format on the sample and on tiny
files."""

import os
import re

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.nlp.data import data_loader_factory

from teams_tf.data import pretrain_dataloader
from tests import testing_utils

# A vocabulary whose ids the tests spell out by hand.
_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'the', 'cat', 'sat', 'on', 'mat', '.',
           'dog', '##s', 'ran']
_ID = {token: i for i, token in enumerate(_TOKENS)}
_SPECIAL_IDS = [0, 1, 2, 3, 4]
_TEXT = 'The cat sat on the mat.\n\n   \nThe dogs ran.\ncats\n'
# "the cat sat on the mat ." + "the dog ##s ran ." + "cat ##s": 14 tokens.
_STREAM = [_ID[t] for t in 'the cat sat on the mat . the dog ##s ran . cat ##s'.split()]


def _as_numpy(dataset):
  return [{key: value.numpy() for key, value in batch.items()} for batch in dataset]


class TextDataLoaderTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self._dir = self.get_temp_dir()
    self._vocab_file = self._write('vocab.txt', ''.join(t + '\n' for t in _TOKENS))
    self._text_file = self._write('tiny.txt', _TEXT)

  def _write(self, name, text):
    path = os.path.join(self._dir, name)
    with open(path, 'w', encoding='utf-8') as f:
      f.write(text)
    return path

  def _tiny_config(self, **overrides):
    fields = dict(input_path=self._text_file, vocab_file=self._vocab_file, seq_length=6,
                  max_predictions_per_seq=2, global_batch_size=2, is_training=False,
                  drop_remainder=False, seed=3)
    return pretrain_dataloader.PretrainDataConfig(**(fields | overrides))

  def test_registered_with_model_garden_factory(self):
    loader = data_loader_factory.get_data_loader(self._tiny_config())
    self.assertIsInstance(loader, pretrain_dataloader.PretrainDataLoader)

  def test_sample_element_spec(self):
    config = pretrain_dataloader.PretrainDataConfig(
        input_path='sample:valid', is_training=True, global_batch_size=4, seq_length=32,
        max_predictions_per_seq=5)
    spec = pretrain_dataloader.PretrainDataLoader(config).load().element_spec
    expected = {'input_word_ids': ([4, 32], tf.int32), 'input_mask': ([4, 32], tf.int32),
                'input_type_ids': ([4, 32], tf.int32), 'masked_lm_positions': ([4, 5], tf.int32),
                'masked_lm_ids': ([4, 5], tf.int32), 'masked_lm_weights': ([4, 5], tf.float32)}
    self.assertEqual({k: (v.shape.as_list(), v.dtype) for k, v in spec.items()}, expected)

  def test_tiny_file_packing(self):
    batches = _as_numpy(pretrain_dataloader.PretrainDataLoader(self._tiny_config()).load())
    word_ids = np.concatenate([testing_utils.unmask(b) for b in batches])
    cls, sep, pad = _ID['[CLS]'], _ID['[SEP]'], _ID['[PAD]']
    # Chunks of seq_length - 2 = 4 tokens across line boundaries; blank lines are dropped.
    expected = [[cls] + _STREAM[i:i + 4] + [sep] for i in range(0, 12, 4)] + [
        [cls] + _STREAM[12:] + [sep, pad, pad]]
    self.assertAllEqual(word_ids, expected)
    input_mask = np.concatenate([b['input_mask'] for b in batches])
    self.assertAllEqual(input_mask, [[1] * 6] * 3 + [[1, 1, 1, 1, 0, 0]])
    self.assertAllEqual(np.concatenate([b['input_type_ids'] for b in batches]), np.zeros([4, 6]))

  def test_masked_positions_are_consistent(self):
    config = self._tiny_config(max_predictions_per_seq=4, mask_rate=0.5)
    for batch in _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load()):
      original = testing_utils.unmask(batch)
      for row in range(len(original)):
        real = batch['masked_lm_weights'][row] > 0
        positions = batch['masked_lm_positions'][row][real]
        self.assertGreater(len(positions), 0)
        self.assertFalse(np.any(np.isin(original[row][positions], _SPECIAL_IDS)))
        self.assertAllEqual(batch['masked_lm_ids'][row][real], original[row][positions])
        corrupted = batch['input_word_ids'][row][positions]
        self.assertTrue(np.all((corrupted == _ID['[MASK]']) | ~np.isin(corrupted, _SPECIAL_IDS)))

  def test_sample_sequences_and_masks(self):
    config = pretrain_dataloader.PretrainDataConfig(input_path='sample:valid', is_training=False,
                                            global_batch_size=16, drop_remainder=False)
    loader = pretrain_dataloader.PretrainDataLoader(config)
    vocab = loader.vocabulary
    batches = _as_numpy(loader.load())
    word_ids = np.concatenate([testing_utils.unmask(b) for b in batches])
    lengths = np.concatenate([b['input_mask'] for b in batches]).sum(axis=1)
    self.assertGreater(len(word_ids), 100)
    self.assertAllEqual(word_ids[:, 0], np.full(len(word_ids), vocab.cls_id))
    self.assertAllEqual(word_ids[np.arange(len(word_ids)), lengths - 1],
                        np.full(len(word_ids), vocab.sep_id))
    # Only the final sequence of the stream is shorter than seq_length.
    self.assertAllEqual(lengths[:-1], np.full(len(word_ids) - 1, 128))
    self.assertTrue(np.all(word_ids[-1, lengths[-1]:] == vocab.pad_id))
    weights = np.concatenate([b['masked_lm_weights'] for b in batches])
    self.assertAllEqual(weights[:-1].sum(axis=1),
                        np.full(len(word_ids) - 1, 19))  # round(126 * 0.15)

  @parameterized.named_parameters(('train', 'sample:train'), ('valid', 'sample:valid'))
  def test_sample_unknown_token_rate_is_below_one_percent(self, input_path):
    config = pretrain_dataloader.PretrainDataConfig(input_path=input_path, is_training=False,
                                            global_batch_size=64, drop_remainder=False)
    loader = pretrain_dataloader.PretrainDataLoader(config)
    batches = _as_numpy(loader.load())
    word_ids = np.concatenate([testing_utils.unmask(b) for b in batches])
    real = np.concatenate([b['input_mask'] for b in batches]) > 0
    self.assertLess(np.mean(word_ids[real] == loader.vocabulary.unk_id), 0.01)

  def test_eval_is_finite_and_identical_across_loads(self):
    config = pretrain_dataloader.PretrainDataConfig(input_path='sample:valid', is_training=False,
                                            global_batch_size=8, seq_length=64, seed=None)
    first = _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load())
    second = _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load())
    self.assertNotEmpty(first)
    self.assertEqual(len(first), len(second))
    for a, b in zip(first, second):
      for key in a:
        self.assertAllEqual(a[key], b[key])

  def test_training_is_reproducible_for_a_fixed_seed(self):
    def first_batches(seed):
      config = pretrain_dataloader.PretrainDataConfig(
          input_path='sample:valid', is_training=True, seed=seed, global_batch_size=8,
          seq_length=64, shuffle_buffer_size=50)
      return _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load().take(3))

    first, again, other = first_batches(5), first_batches(5), first_batches(6)
    for a, b in zip(first, again):
      for key in a:
        self.assertAllEqual(a[key], b[key])
    self.assertNotAllEqual(first[0]['input_word_ids'], other[0]['input_word_ids'])

  def test_training_repeats_with_new_masks_each_epoch(self):
    # Buffers of 1 keep stream order: batch k and batch k + 2 hold the same 2 chunks
    # in the next epoch.
    config = self._tiny_config(is_training=True, shuffle_buffer_size=1, line_shuffle_buffer_size=1,
                               drop_remainder=True)
    batches = _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load().take(20))
    self.assertLen(batches, 20)
    for k in range(18):
      self.assertAllEqual(testing_utils.unmask(batches[k]), testing_utils.unmask(batches[k + 2]))
    positions = np.stack([b['masked_lm_positions'] for b in batches[::2]])
    self.assertGreater(len({p.tobytes() for p in positions}), 1)

  def test_shards_files_across_input_pipelines(self):
    second_file = self._write('tiny2.txt', 'the dog ran .\n')
    config = self._tiny_config(input_path=f'{self._text_file},{second_file}', global_batch_size=4)
    streams = []
    for pipeline_id in range(2):
      context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id,
                                           num_replicas_in_sync=2)
      batches = _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load(context))
      self.assertTrue(all(len(b['input_word_ids']) <= 2 for b in batches))  # per-replica batch size
      streams.append(np.concatenate([testing_utils.unmask(b) for b in batches]))
    self.assertLen(streams[0], 4)  # all of tiny.txt
    self.assertAllEqual(streams[1], [[_ID['[CLS]'], _ID['the'], _ID['dog'], _ID['ran'], _ID['.'],
                                      _ID['[SEP]']]])

  def test_shards_lines_when_files_are_fewer_than_pipelines(self):
    config = self._tiny_config(seq_length=20, max_predictions_per_seq=3)
    tokens = []
    for pipeline_id in range(2):
      context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id)
      batches = _as_numpy(pretrain_dataloader.PretrainDataLoader(config).load(context))
      (word_ids,) = [testing_utils.unmask(b) for b in batches]
      tokens.append(word_ids[0][1:word_ids[0].tolist().index(_ID['[SEP]'])].tolist())
    # Non-blank lines 0 and 2 go to pipeline 0, line 1 to pipeline 1.
    self.assertEqual(tokens[0], _STREAM[:7] + _STREAM[12:])
    self.assertEqual(tokens[1], _STREAM[7:12])

  def test_input_path_matching_nothing_names_the_pattern(self):
    missing = os.path.join(self._dir, 'nothing*.txt')
    with self.assertRaisesRegex(ValueError, rf"pattern '{re.escape(missing)}' matches no file"):
      pretrain_dataloader.PretrainDataLoader(
          self._tiny_config(input_path=f'{self._text_file}, {missing}'))

  @parameterized.named_parameters(
      ('empty_path', dict(input_path=''), 'input_path is empty'),
      ('unknown_sample', dict(input_path='sample:test'), 'valid choices are sample:train'),
      ('short_sequence', dict(seq_length=2), 'seq_length=2 must be >= 3'),
      ('too_many_predictions', dict(max_predictions_per_seq=5), r'must be <= seq_length - 2 = 4'),
      ('no_batch_size', dict(global_batch_size=0), 'global_batch_size=0 must be >= 1'),
      ('unset_is_training', dict(is_training=None), 'is_training is None'),
      ('no_line_buffer', dict(is_training=True, line_shuffle_buffer_size=0),
       'line_shuffle_buffer_size=0 must be >= 1'),
      ('bad_rates', dict(mask_token_rate=0.95), 'mask_token_rate \\+ random_token_rate'),
      ('missing_vocab', dict(vocab_file='/nonexistent/vocab.txt'), 'does not exist'),
  )
  def test_invalid_config(self, overrides, message):
    with self.assertRaisesRegex(ValueError, message):
      pretrain_dataloader.PretrainDataLoader(self._tiny_config(**overrides))

  def test_vocabulary_without_ordinary_tokens(self):
    vocab_file = self._write('specials.txt', ''.join(t + '\n' for t in _TOKENS[:5]))
    with self.assertRaisesRegex(ValueError, 'vocab_size=5 leaves no non-special token'):
      pretrain_dataloader.PretrainDataLoader(self._tiny_config(vocab_file=vocab_file))


if __name__ == '__main__':
  tf.test.main()
