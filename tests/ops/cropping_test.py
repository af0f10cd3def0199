"""COCO-LM cropped views: contiguous, of the configured fraction, inside the sequence."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.ops import cropping


def _batch(lengths, seq_length=20):
  word_ids = np.zeros((len(lengths), seq_length), np.int32)
  for b, n in enumerate(lengths):
    word_ids[b, :n] = np.arange(100, 100 + n)  # Distinct ids: the id gives the position.
    word_ids[b, 0] = 2  # [CLS]
  input_mask = (word_ids > 0).astype(np.int32)
  type_ids = np.zeros_like(word_ids)
  for b, n in enumerate(lengths):
    type_ids[b, n // 2:n] = 1
  return word_ids, input_mask, type_ids


class CropSequencesTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(0.9, 0.7, 1.0)
  def test_crops_are_contiguous_spans_of_the_configured_fraction(self, fraction):
    lengths = [20, 11, 6, 2]
    word_ids, input_mask, type_ids = _batch(lengths)
    for seed in range(20):
      out = {k: v.numpy() for k, v in cropping.crop_sequences(
          word_ids, input_mask, type_ids, fraction, seed=[seed, 7]).items()}
      for b, n in enumerate(lengths):
        m = max(1, round(fraction * (n - 1)))
        row = out['input_word_ids'][b]
        self.assertEqual(m, out['crop_length'][b])
        self.assertEqual(2, row[0])  # [CLS] kept in front.
        self.assertEqual(1 + m, out['input_mask'][b].sum())
        span = row[1:1 + m] - 100  # Original positions of the kept tokens.
        self.assertAllEqual(np.arange(span[0], span[0] + m), span)  # Contiguous.
        self.assertGreaterEqual(span[0], 1)
        self.assertLessEqual(span[-1], n - 1)  # Inside the real tokens.
        self.assertAllEqual(np.zeros(20 - 1 - m), row[1 + m:])  # Padded.
        self.assertAllEqual(type_ids[b][span], out['input_type_ids'][b][1:1 + m])

  def test_start_is_spread_over_all_positions(self):
    word_ids, input_mask, type_ids = _batch([11] * 400)  # Body 10, crop 9: starts 1 or 2.
    starts = cropping.crop_sequences(
        word_ids, input_mask, type_ids, 0.9, seed=[1, 2])['crop_start'].numpy()
    self.assertEqual({1, 2}, set(starts))
    self.assertBetween(np.mean(starts == 1), 0.4, 0.6)

  def test_same_seed_same_crop(self):
    args = _batch([20, 9])
    first = cropping.crop_sequences(*args, 0.9, seed=[3, 4])['input_word_ids']
    again = cropping.crop_sequences(*args, 0.9, seed=[3, 4])['input_word_ids']
    self.assertAllEqual(first, again)

  def test_bad_fraction(self):
    with self.assertRaisesRegex(ValueError, r'crop fraction=0 must be in \(0, 1\]'):
      cropping.crop_sequences(*_batch([5]), 0, seed=[1, 2])


if __name__ == '__main__':
  tf.test.main()
