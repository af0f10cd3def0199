"""Tests for teams_tf.data.masking: properties over many seeded draws, not exact ids."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.data import masking

_VOCAB_SIZE = 1000
_PAD, _UNK, _CLS, _SEP, _MASK = 0, 1, 2, 3, 4
_SPECIAL_IDS = (_PAD, _UNK, _CLS, _SEP, _MASK)


def _sequence(num_tokens, seq_length, unk_every=0):
  """[CLS] + num_tokens ordinary ids (every unk_every-th one [UNK]) + [SEP], padded
  to seq_length."""
  rng = np.random.default_rng(num_tokens)
  tokens = rng.integers(len(_SPECIAL_IDS), _VOCAB_SIZE, size=num_tokens)
  if unk_every:
    tokens[::unk_every] = _UNK
  ids = np.concatenate([[_CLS], tokens, [_SEP], np.full(seq_length - num_tokens - 2, _PAD)])
  return ids.astype(np.int32)


def _mask_many(token_ids, num_seeds, first_seed=0, **kwargs):
  """Masks `token_ids` once per seed (first_seed, i), i < num_seeds; returns a dict of NumPy
  arrays."""
  kwargs = dict(max_predictions_per_seq=20, special_ids=_SPECIAL_IDS, mask_id=_MASK,
                vocab_size=_VOCAB_SIZE) | kwargs
  seeds = tf.data.Dataset.range(num_seeds).map(
      lambda i: tf.stack([tf.constant(first_seed, tf.int64), i]))
  dataset = seeds.map(lambda seed: masking.mask_tokens(token_ids, seed, **kwargs)).batch(num_seeds)
  return {key: value.numpy() for key, value in next(iter(dataset)).items()}


class MaskTokensTest(tf.test.TestCase, parameterized.TestCase):

  def test_output_shapes_and_dtypes(self):
    out = masking.mask_tokens(_sequence(30, 40), tf.constant([1, 2], tf.int32),
                              max_predictions_per_seq=6, special_ids=_SPECIAL_IDS, mask_id=_MASK,
                              vocab_size=_VOCAB_SIZE)
    expected = {'input_word_ids': ([40], tf.int32), 'masked_lm_positions': ([6], tf.int32),
                'masked_lm_ids': ([6], tf.int32), 'masked_lm_weights': ([6], tf.float32)}
    self.assertEqual({k: (v.shape.as_list(), v.dtype) for k, v in out.items()}, expected)

  def test_graph_mode_with_unknown_length_keeps_static_prediction_slots(self):
    fn = tf.function(lambda ids, seed: masking.mask_tokens(
        ids, seed, max_predictions_per_seq=5, special_ids=_SPECIAL_IDS, mask_id=_MASK,
        vocab_size=_VOCAB_SIZE))
    outputs = fn.get_concrete_function(
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([2], tf.int64)).structured_outputs
    self.assertEqual(outputs['input_word_ids'].shape.as_list(), [None])
    self.assertEqual(outputs['masked_lm_weights'].shape.as_list(), [5])

  @parameterized.named_parameters(
      ('no_padding', 60, 62, 0),
      ('padding', 25, 64, 0),
      ('padding_and_unknown', 40, 64, 3),
  )
  def test_properties_over_many_seeds(self, num_tokens, seq_length, unk_every):
    ids = _sequence(num_tokens, seq_length, unk_every)
    out = _mask_many(ids, num_seeds=300, mask_rate=0.2, max_predictions_per_seq=10)
    maskable = ~np.isin(ids, _SPECIAL_IDS)
    for i in range(300):
      weights = out['masked_lm_weights'][i]
      n = int(weights.sum())
      self.assertAllEqual(weights, [1.0] * n + [0.0] * (10 - n))
      positions = out['masked_lm_positions'][i][:n]
      self.assertTrue(np.all(np.diff(positions) > 0), msg=f'not sorted/distinct: {positions}')
      self.assertTrue(np.all(maskable[positions]), msg=f'special or padding picked: {positions}')
      self.assertAllEqual(out['masked_lm_ids'][i][:n], ids[positions])
      self.assertAllEqual(out['masked_lm_positions'][i][n:], np.zeros(10 - n))
      self.assertAllEqual(out['masked_lm_ids'][i][n:], np.zeros(10 - n))
      unpicked = np.ones(seq_length, bool)
      unpicked[positions] = False
      self.assertAllEqual(out['input_word_ids'][i][unpicked], ids[unpicked])
      replaced = out['input_word_ids'][i][positions]
      self.assertTrue(np.all((replaced == _MASK) | ~np.isin(replaced, _SPECIAL_IDS)))
    # Every maskable position is picked sometimes: the subset is random, not a fixed prefix.
    picked = np.zeros(seq_length, int)
    np.add.at(picked, out['masked_lm_positions'][out['masked_lm_weights'] > 0], 1)
    self.assertTrue(np.all(picked[maskable] > 0))

  @parameterized.named_parameters(
      ('rounds_down', 27, 0.15, 20),  # 4.05 -> 4
      ('rounds_half_to_even_down', 30, 0.15, 20),  # 4.5 -> 4 as Python's round()
      ('rounds_half_to_even_up', 10, 0.15, 20),  # 1.5 -> 2
      ('at_least_one', 3, 0.15, 20),  # 0.45 -> 0 -> 1
      ('capped_by_slots', 100, 0.5, 20),  # 50 -> 20
      ('all_tokens', 8, 1.0, 20),
  )
  def test_number_of_predictions(self, num_tokens, mask_rate, max_predictions):
    ids = _sequence(num_tokens, num_tokens + 10)
    out = _mask_many(ids, num_seeds=3, mask_rate=mask_rate, max_predictions_per_seq=max_predictions)
    expected = min(max_predictions, max(1, round(num_tokens * mask_rate)))
    self.assertAllEqual(out['masked_lm_weights'].sum(axis=1), [expected] * 3)

  def test_no_maskable_token_gives_no_prediction(self):
    out = _mask_many(np.array([_CLS, _UNK, _SEP, _PAD, _PAD], np.int32), num_seeds=2)
    self.assertAllEqual(out['masked_lm_weights'], np.zeros([2, 20]))
    self.assertAllEqual(out['input_word_ids'], [[_CLS, _UNK, _SEP, _PAD, _PAD]] * 2)

  @parameterized.named_parameters(
      ('bert', 0.8, 0.1),
      ('skewed', 0.5, 0.3),
  )
  def test_corruption_frequencies(self, mask_token_rate, random_token_rate):
    ids = _sequence(100, 102)
    # 1000 sequences x 20 predictions = 20k draws; 5 binomial standard deviations is about 0.014.
    out = _mask_many(ids, num_seeds=1000, mask_rate=0.2, mask_token_rate=mask_token_rate,
                     random_token_rate=random_token_rate)
    self.assertAllEqual(out['masked_lm_weights'], np.ones([1000, 20]))
    rows = np.arange(1000)[:, None]
    corrupted = out['input_word_ids'][rows, out['masked_lm_positions']]
    original = out['masked_lm_ids']
    is_mask = corrupted == _MASK
    is_kept = corrupted == original  # Includes the ~0.1% random draws equal to the original.
    is_random = ~is_mask & ~is_kept
    tolerance = 5 * np.sqrt(0.25 / 20000)
    self.assertAllClose(is_mask.mean(), mask_token_rate, atol=tolerance)
    self.assertAllClose(is_random.mean(), random_token_rate, atol=tolerance)
    self.assertAllClose(is_kept.mean(), 1 - mask_token_rate - random_token_rate, atol=tolerance)
    # Replacements are ordinary ids spread over the whole vocabulary, not near the originals.
    random_ids = corrupted[is_random]
    self.assertFalse(np.any(np.isin(random_ids, _SPECIAL_IDS)))
    self.assertAllClose(random_ids.mean(), (len(_SPECIAL_IDS) + _VOCAB_SIZE - 1) / 2, rtol=0.05)
    self.assertLess(random_ids.min(), 100)
    self.assertGreater(random_ids.max(), _VOCAB_SIZE - 100)

  def test_all_mask_tokens_for_electra_style(self):
    ids = _sequence(50, 64)
    out = _mask_many(ids, num_seeds=100, mask_token_rate=1.0, random_token_rate=0.0)
    rows = np.arange(100)[:, None]
    corrupted = out['input_word_ids'][rows, out['masked_lm_positions']]
    self.assertAllEqual(corrupted[out['masked_lm_weights'] > 0], np.full(100 * 8, _MASK))

  def test_same_seed_same_result_different_seed_different_result(self):
    ids = _sequence(100, 128)
    first = _mask_many(ids, num_seeds=20, first_seed=7)
    again = _mask_many(ids, num_seeds=20, first_seed=7)
    other = _mask_many(ids, num_seeds=20, first_seed=8)
    for key in first:
      self.assertAllEqual(first[key], again[key])
    self.assertNotAllEqual(first['masked_lm_positions'], other['masked_lm_positions'])
    # Within one batch of seeds every draw differs too.
    self.assertLen({tuple(row) for row in first['masked_lm_positions']}, 20)

  @parameterized.named_parameters(
      ('no_slots', dict(max_predictions_per_seq=0), 'max_predictions_per_seq=0'),
      ('zero_mask_rate', dict(mask_rate=0.0), r'mask_rate=0.0 must be in \(0, 1\]'),
      ('mask_rate_above_one', dict(mask_rate=1.5), 'mask_rate=1.5'),
      ('negative_rate', dict(random_token_rate=-0.1),
       r'random_token_rate=-0.1 must be in \[0, 1\]'),
      ('rates_sum_above_one', dict(mask_token_rate=0.9, random_token_rate=0.2), 'must be <= 1'),
      ('mask_id_not_special', dict(mask_id=7), 'mask_id=7 must be one of special_ids'),
      ('id_outside_vocab', dict(vocab_size=3), r'outside \[0, vocab_size=3\)'),
      ('only_special_tokens', dict(vocab_size=5), 'leaves no non-special token'),
  )
  def test_invalid_arguments(self, overrides, message):
    kwargs = dict(max_predictions_per_seq=20, special_ids=_SPECIAL_IDS, mask_id=_MASK,
                  vocab_size=_VOCAB_SIZE) | overrides
    with self.assertRaisesRegex(ValueError, message):
      masking.mask_tokens(_sequence(10, 12), tf.constant([0, 0]), **kwargs)


  def test_predictions_must_fit_between_cls_and_sep(self):
    kwargs = dict(max_predictions_per_seq=20, mask_rate=0.15, mask_token_rate=0.8,
                  random_token_rate=0.1, special_ids=_SPECIAL_IDS, mask_id=_MASK,
                  vocab_size=_VOCAB_SIZE)
    masking.validate_masking_args(seq_length=22, **kwargs)
    with self.assertRaisesRegex(ValueError, 'max_predictions_per_seq=20 must be <= seq_length - 2 '
                                '= 19'):
      masking.validate_masking_args(seq_length=21, **kwargs)

if __name__ == '__main__':
  tf.test.main()
