"""Dynamic masked-LM corruption inside tf.data (BERT, Devlin et al. 2019, Sec. 3.1 "Task #1").

For one sequence, `mask_tokens` picks `min(P, max(1, round(n * mask_rate)))` of its `n` maskable
tokens (everything but special tokens and padding) uniformly at random, then replaces each picked
token by `[MASK]` with probability `mask_token_rate`, by a token drawn uniformly from the
non-special ids with probability `random_token_rate`, and otherwise leaves it unchanged. BERT uses
0.15 / 0.8 / 0.1; ELECTRA and TEAMS feed the generator all-`[MASK]` inputs (`mask_token_rate=1.0`,
`random_token_rate=0.0`). Only stateless random ops are used, so a seed fully determines the result.
"""

from typing import Optional, Sequence

import tensorflow as tf


def validate_masking_args(*, max_predictions_per_seq: int, mask_rate: float, mask_token_rate: float,
                          random_token_rate: float, special_ids: Sequence[int], mask_id: int,
                          vocab_size: int, seq_length: Optional[int] = None) -> None:
  """Checks `mask_tokens` arguments in Python, before any graph is built.

  `seq_length`, when given, is the length of the sequences to mask (with [CLS] and [SEP]): the
  data configs' one check that `max_predictions_per_seq` fits in it.

  Raises:
    ValueError: naming the offending argument, its value and the valid range.
  """
  if max_predictions_per_seq < 1:
    raise ValueError(f'max_predictions_per_seq={max_predictions_per_seq} must be >= 1.')
  if seq_length is not None and max_predictions_per_seq > seq_length - 2:
    raise ValueError(f'max_predictions_per_seq={max_predictions_per_seq} must be <= '
                     f'seq_length - 2 = {seq_length - 2}, the most tokens a sequence can mask.')
  if not 0.0 < mask_rate <= 1.0:
    raise ValueError(f'mask_rate={mask_rate} must be in (0, 1]; BERT uses 0.15.')
  for name, rate in (('mask_token_rate', mask_token_rate),
                     ('random_token_rate', random_token_rate)):
    if not 0.0 <= rate <= 1.0:
      raise ValueError(f'{name}={rate} must be in [0, 1].')
  if mask_token_rate + random_token_rate > 1.0:
    raise ValueError(f'mask_token_rate + random_token_rate = {mask_token_rate} + '
                     f'{random_token_rate} must be <= 1 (the remainder keeps the original token); '
                     'BERT uses 0.8 + 0.1, ELECTRA 1.0 + 0.0.')
  bad_ids = [i for i in (*special_ids, mask_id) if not 0 <= i < vocab_size]
  if bad_ids:
    raise ValueError(f'Token ids {bad_ids} are outside [0, vocab_size={vocab_size}); the special '
                     'ids and vocab_size must come from the same vocabulary.')
  if mask_id not in special_ids:
    raise ValueError(f'mask_id={mask_id} must be one of special_ids={tuple(special_ids)}, or '
                     'inputs that already contain [MASK] could be masked again.')
  if len(set(special_ids)) >= vocab_size:
    raise ValueError(f'vocab_size={vocab_size} leaves no non-special token to predict or to sample '
                     f'as a random replacement (special_ids={tuple(special_ids)}); use a real '
                     'vocabulary.')


def mask_tokens(token_ids: tf.Tensor,
                seed: tf.Tensor,
                *,
                max_predictions_per_seq: int,
                special_ids: Sequence[int],
                mask_id: int,
                vocab_size: int,
                mask_rate: float = 0.15,
                mask_token_rate: float = 0.8,
                random_token_rate: float = 0.1,
                continuation_ids: Sequence[int] = ()) -> dict[str, tf.Tensor]:
  """Applies masked-LM corruption to one unbatched sequence; map it over a dataset before batching.

  Args:
    token_ids: [T] int32 ids, possibly padded; padding must use an id listed in `special_ids`.
    seed: [2] int32 or int64 stateless seed; the same seed and input give the same output.
    max_predictions_per_seq: P, the static number of prediction slots.
    special_ids: ids never picked for prediction nor drawn as random replacements; must include the
      padding id and `mask_id` ([CLS], [SEP], [PAD], [UNK], [MASK]: `Vocabulary.special_ids`).
    mask_id: id of `[MASK]`.
    vocab_size: V; random replacements are drawn uniformly from the ids in [0, V) not in
      `special_ids` (so they may equal the original token, as in BERT).
    mask_rate: fraction of maskable tokens to predict, in (0, 1].
    mask_token_rate: probability that a picked token becomes `[MASK]`.
    random_token_rate: probability that a picked token becomes a random token; the remaining
      `1 - mask_token_rate - random_token_rate` keep the original token.
    continuation_ids: WordPiece continuation ids (`##...`, `Vocabulary.continuation_ids`). When
      given, masking is whole-word (BERT's `--do_whole_word_mask`): a word and all its pieces are
      picked together, words in random order until the next word would exceed the prediction
      budget; the [MASK]/random/keep choice is still made per piece, as in BERT. Empty: each
      maskable token is its own word (plain token masking).

  Returns:
    A dict with
      `input_word_ids`: [T] int32, `token_ids` with the picked positions corrupted.
      `masked_lm_positions`: [P] int32, distinct positions in ascending order, then 0 in
        padding slots.
      `masked_lm_ids`: [P] int32, the original tokens at those positions, 0 in padding slots.
      `masked_lm_weights`: [P] float32, 1.0 for real predictions, 0.0 for padding slots.

  Raises:
    ValueError: invalid arguments (see `validate_masking_args`).
  """
  validate_masking_args(
      max_predictions_per_seq=max_predictions_per_seq, mask_rate=mask_rate,
      mask_token_rate=mask_token_rate, random_token_rate=random_token_rate, special_ids=special_ids,
      mask_id=mask_id, vocab_size=vocab_size)
  num_slots = max_predictions_per_seq
  token_ids = tf.convert_to_tensor(token_ids, dtype=tf.int32)
  # One independent stream each for picking positions, choosing the corruption and
  # drawing random tokens.
  position_seed, action_seed, replacement_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, num=3))

  special_set = set(special_ids)
  special = tf.constant(sorted(special_set), dtype=tf.int32)
  maskable = tf.reduce_all(tf.not_equal(token_ids[:, None], special[None, :]), axis=1)  # [T]
  num_maskable = tf.reduce_sum(tf.cast(maskable, tf.int32))
  # float64 so rounding matches Python's round(n * rate) at exact halves
  # (0.15 is inexact in float32).
  num_wanted = tf.cast(tf.round(tf.cast(num_maskable, tf.float64) * mask_rate), tf.int32)
  num_predictions = tf.minimum(num_slots, tf.minimum(num_maskable, tf.maximum(1, num_wanted)))

  # A word starts at every maskable token that is not a continuation piece; pieces join the word
  # before them. With no continuation ids every maskable token is a one-token word.
  starts = maskable
  if continuation_ids:
    continuation = tf.constant(sorted(set(continuation_ids)), dtype=tf.int32)
    starts &= tf.reduce_all(tf.not_equal(token_ids[:, None], continuation[None, :]), axis=1)
  word_of_token = tf.cumsum(tf.cast(starts, tf.int32)) - 1  # [T]; -1 before the first word.
  in_word = maskable & (word_of_token >= 0)
  num_words = tf.reduce_sum(tf.cast(starts, tf.int32))
  # Tokens outside every word point at an extra, never-chosen slot W.
  word_index = tf.where(in_word, word_of_token, num_words)  # [T]
  word_lengths = tf.math.unsorted_segment_sum(
      tf.cast(in_word, tf.int32), word_index, num_words + 1)[:num_words]  # [W]
  # Sorting i.i.d. uniform scores gives a uniformly random word order; take the longest prefix of
  # that order whose tokens fit the budget.
  word_scores = tf.random.stateless_uniform([num_words], seed=position_seed)
  order = tf.argsort(word_scores, direction='DESCENDING')  # [W]
  fits = tf.cumsum(tf.gather(word_lengths, order)) <= num_predictions
  chosen_words = tf.scatter_nd(order[:, None], tf.cast(fits, tf.int32), [num_words + 1]) > 0
  chosen = tf.gather(chosen_words, word_index)  # [T]
  positions = tf.cast(tf.where(chosen)[:, 0], tf.int32)  # [n], ascending.
  num_predictions = tf.size(positions)
  original_ids = tf.gather(token_ids, positions)  # [n]

  action = tf.random.stateless_uniform([num_predictions], seed=action_seed)
  non_special = tf.constant([i for i in range(vocab_size) if i not in special_set], dtype=tf.int32)
  random_ids = tf.gather(non_special, tf.random.stateless_uniform(
      [num_predictions], seed=replacement_seed, minval=0, maxval=tf.size(non_special),
      dtype=tf.int32))
  corrupted_ids = tf.where(
      action < mask_token_rate, mask_id,
      tf.where(action < mask_token_rate + random_token_rate, random_ids, original_ids))
  input_word_ids = tf.tensor_scatter_nd_update(token_ids, positions[:, None], corrupted_ids)

  num_padding_slots = num_slots - num_predictions
  masked_lm_positions = tf.pad(positions, [[0, num_padding_slots]])
  masked_lm_ids = tf.pad(original_ids, [[0, num_padding_slots]])
  masked_lm_weights = tf.cast(tf.range(num_slots) < num_predictions, tf.float32)
  masked_lm_positions.set_shape([num_slots])
  masked_lm_ids.set_shape([num_slots])
  return {
      'input_word_ids': input_word_ids,
      'masked_lm_positions': masked_lm_positions,
      'masked_lm_ids': masked_lm_ids,
      'masked_lm_weights': masked_lm_weights,
  }
