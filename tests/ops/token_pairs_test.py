"""TACO token pairs: positives inside the window, never the token or padding; negatives from
other sequences only."""

import numpy as np
import tensorflow as tf

from teams_tf.ops import token_pairs


def _mask(lengths, seq_length=12):
  return (np.arange(seq_length)[None, :] < np.array(lengths)[:, None]).astype(np.int32)


class WindowPositivesTest(tf.test.TestCase):

  def test_positives_lie_in_the_window_never_the_token_never_padding(self):
    lengths = [12, 7, 2, 1]
    mask = _mask(lengths)
    seen = {}
    for seed in range(200):
      positions, valid = (x.numpy() for x in token_pairs.window_positives(mask, 3, [seed, 1]))
      for b, n in enumerate(lengths):
        for j in range(12):
          if j >= n or n == 1:
            self.assertFalse(valid[b, j], (b, j))
            continue
          self.assertTrue(valid[b, j])
          p = positions[b, j]
          self.assertNotEqual(j, p)
          self.assertLessEqual(abs(p - j), 3)
          self.assertLess(p, n)
          seen.setdefault((b, j), set()).add(int(p))
    # Every candidate comes up: uniform over the window.
    self.assertEqual({2, 3, 4, 6, 7, 8}, seen[(0, 5)])
    self.assertEqual({1, 2, 3}, seen[(0, 0)])
    self.assertEqual({3, 4, 5}, seen[(1, 6)])

  def test_bad_window(self):
    with self.assertRaisesRegex(ValueError, 'window=0 must be >= 1'):
      token_pairs.window_positives(_mask([3]), 0, [1, 2])


class CrossSequenceNegativesTest(tf.test.TestCase):

  def test_negatives_come_from_other_sequences_and_real_tokens(self):
    lengths = [12, 5, 3, 8]
    mask = _mask(lengths)
    rows, positions = (x.numpy() for x in token_pairs.cross_sequence_negatives(
        mask, 50, [3, 4], row_offset=1, num_rows=2))
    self.assertEqual((2, 12, 50), rows.shape)
    for b in range(2):
      self.assertNotIn(1 + b, rows[b])  # Never the anchor's own sequence (global row 1 + b).
    self.assertTrue(np.all(positions < np.array(lengths)[rows]))
    # All three other rows are drawn, about equally often.
    counts = np.bincount(rows[0].ravel(), minlength=4)
    self.assertEqual(0, counts[1])
    self.assertBetween(counts[[0, 2, 3]].min() / rows[0].size, 0.28, 0.39)

  def test_needs_two_sequences(self):
    with self.assertRaisesRegex(tf.errors.InvalidArgumentError, 'at least two sequences'):
      token_pairs.cross_sequence_negatives(_mask([4]), 5, [1, 2])


if __name__ == '__main__':
  tf.test.main()
