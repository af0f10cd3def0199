"""Tests for teams_tf.data.text_dataloader: raw-text training input is mixed, evaluation input
is not.

Every line of the tiny corpus is two tokens, `f<k> l<i>` (file k, line i), so a 6-token sequence
`[CLS] f l f l [SEP]` holds exactly two whole lines and each line says where it came from. The
tests go through `PretrainDataLoader`, so they also check that the config fields reach the pipeline.
"""

import os

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.data import pretrain_dataloader
from tests import testing_utils

_NUM_FILES = 4
_LINES_PER_FILE = 12
_TOKENS = (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + [f'f{k}' for k in range(_NUM_FILES)] +
           [f'l{i}' for i in range(_LINES_PER_FILE)])


def _lines(sequence):
  """(file, line) pairs of one `[CLS] f l f l [SEP]` sequence, in order."""
  tokens = [_TOKENS[i] for i in sequence[1:5]]
  return [(int(tokens[j][1:]), int(tokens[j + 1][1:])) for j in (0, 2)]


class TextMixingTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    self._dir = self.get_temp_dir()
    self._vocab_file = self._write('vocab.txt', _TOKENS)
    self._files = [self._corpus_file(k, _LINES_PER_FILE) for k in range(_NUM_FILES)]

  def _write(self, name, lines):
    path = os.path.join(self._dir, name)
    with open(path, 'w', encoding='utf-8') as f:
      f.write(''.join(line + '\n' for line in lines))
    return path

  def _corpus_file(self, k, num_lines, name=None):
    return self._write(name or f'wiki_{k:02d}.txt', [f'f{k} l{i}' for i in range(num_lines)])

  def _config(self, files, **overrides):
    fields = dict(input_path=','.join(files), vocab_file=self._vocab_file, seq_length=6,
                  max_predictions_per_seq=2, global_batch_size=4, is_training=True, seed=3)
    return pretrain_dataloader.PretrainDataConfig(**(fields | overrides))

  def _batches(self, config, num_batches=None, input_context=None):
    """Unmasked word ids of the first `num_batches` batches (all if None): list of [B, T]."""
    dataset = pretrain_dataloader.PretrainDataLoader(config).load(input_context)
    if num_batches is not None:
      dataset = dataset.take(num_batches)
    return [testing_utils.unmask({key: value.numpy() for key, value in batch.items()})
            for batch in dataset]

  @parameterized.named_parameters(
      ('defaults', {}),
      ('interleaved_files_only', dict(line_shuffle_buffer_size=1)),
      ('shuffled_lines_only', dict(cycle_length=1)),
  )
  def test_first_training_batch_mixes_files(self, overrides):
    # Sequence buffer 1: any mixing comes from the text level. Reading the files one after another
    # would fill the first batch (8 lines) from a single file.
    config = self._config(self._files, shuffle_buffer_size=1, **overrides)
    (first,) = self._batches(config, 1)
    files = {file for sequence in first for file, _ in _lines(sequence)}
    self.assertGreater(len(files), 1)

  def test_file_order_is_shuffled_anew_every_epoch(self):
    # Two lines per file and no other mixing: one sequence per file, one epoch per batch of 4.
    files = [self._corpus_file(k, 2, f'short_{k}.txt') for k in range(_NUM_FILES)]
    config = self._config(files, shuffle_buffer_size=1, line_shuffle_buffer_size=1, cycle_length=1)
    orders = [tuple(_lines(sequence)[0][0] for sequence in batch)
              for batch in self._batches(config, 6)]
    for order in orders:
      self.assertCountEqual(order, range(_NUM_FILES))
    self.assertGreater(len(set(orders)), 1)

  def test_training_order_is_a_function_of_the_seed(self):
    def first_batches(seed):
      # Sequence buffer 1: the order depends on the seed only through the file and line shuffles.
      config = self._config(self._files, seed=seed, shuffle_buffer_size=1)
      return np.stack(self._batches(config, 3))

    first, again, other = first_batches(5), first_batches(5), first_batches(6)
    self.assertAllEqual(first, again)
    self.assertNotAllEqual(first, other)

  def test_evaluation_reads_files_in_the_given_order(self):
    files = [self._files[2], self._files[0], self._files[1]]  # not sorted
    config = self._config(files, is_training=False, drop_remainder=False)
    lines = [line for batch in self._batches(config) for sequence in batch
             for line in _lines(sequence)]
    self.assertEqual(lines, [(k, i) for k in (2, 0, 1) for i in range(_LINES_PER_FILE)])

  def test_input_pipelines_read_disjoint_files(self):
    seen = []
    for pipeline_id in range(2):
      context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline_id)
      batches = self._batches(self._config(self._files), 6, context)
      seen.append({file for batch in batches for sequence in batch for file, _ in _lines(sequence)})
    self.assertEmpty(seen[0] & seen[1])
    self.assertEqual(seen[0] | seen[1], set(range(_NUM_FILES)))

  def test_input_pipelines_split_lines_disjointly_when_files_are_fewer(self):
    # 12 lines in 2 files for 3 pipelines: each pipeline's epoch is 4 lines, its first 2 sequences.
    # Pipelines split one shuffled line stream, so they must all shuffle the files alike.
    files = [self._corpus_file(k, 6, f'half_{k}.txt') for k in range(2)]
    config = self._config(files, global_batch_size=2, shuffle_buffer_size=1)
    shares = []
    for pipeline_id in range(3):
      context = tf.distribute.InputContext(num_input_pipelines=3, input_pipeline_id=pipeline_id)
      (first,) = self._batches(config, 1, context)
      shares.append({line for sequence in first for line in _lines(sequence)})
    for share in shares:
      self.assertLen(share, 4)
    self.assertEqual(shares[0] | shares[1] | shares[2],
                     {(k, i) for k in range(2) for i in range(6)})


if __name__ == '__main__':
  tf.test.main()
