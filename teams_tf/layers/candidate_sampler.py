"""Generator-side sampling for TEAMS (paper §3.2): replaced tokens and candidate sets.

For every masked position i the generator distribution P_G(·|x^M) (Eq. 2) is used twice:
  1. the replaced token x̂_i ~ P_G(·|x^M), which may equal the original x_i (its RTD label is
     then "original", as in ELECTRA), and
  2. in a separate draw, K non-original tokens sampled from P_G *without replacement* with the
     original excluded, which together with x_i form the candidate set S_i of Eq. (7).
The without-replacement draw uses the Gumbel-top-k trick: adding i.i.d. Gumbel noise to the
log-probabilities and keeping the K largest non-original ones is distributed exactly as K
sequential draws without replacement (Kool et al., 2019); its noise is independent of the
replacement draw's, so the pair has the law of the paper's two separate draws. The K largest
non-original scores are the K + 1 largest scores without the original, so no masked [B, P, V]
copy is made. Both draws go through blocks of the vocabulary (`token_sampling.gumbel_max_sample`,
`gumbel_top_k`): the same laws, with noise for a few hundred entries per position instead of V.
Strategy "hardest" keeps the K most likely non-original tokens instead (the paper's Figure 5
comparison).

Unlike Model Garden's `candidate_size`, K here counts only non-original tokens, as in the paper.
"""

import tensorflow as tf
import tf_keras

from teams_tf.ops import token_sampling

_STRATEGIES = ('sampled', 'hardest')


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class CandidateSampler(tf_keras.layers.Layer):
  """Samples replaced tokens and K non-original candidates from generator logits.

  The layer has no weights. All sampling runs in float32 on `tf.stop_gradient(logits)`:
  nothing is differentiable through it (TEAMS trains G only through the MLM loss).
  """

  def __init__(self, num_negatives=5, strategy='sampled', block_size=128, **kwargs):
    """Initializes the sampler.

    Args:
      num_negatives: K, the number of non-original candidates per masked position
        (paper default 5, §4.1); 0 draws only the replaced tokens (ELECTRA).
      strategy: 'sampled' draws the K candidates from P_G without replacement (paper
        default); 'hardest' takes the K most likely non-original tokens.
      block_size: C, vocabulary entries per block of the blocked Gumbel draws; changes the
        cost (V log-sum-exp terms plus noise for ~V / C + (K + 2) C entries per position), never
        the law.
      **kwargs: Keras layer arguments (`name`, `dtype`, ...).
    """
    super().__init__(**kwargs)
    if num_negatives < 0:
      raise ValueError(
          f'num_negatives={num_negatives} must be >= 0 (K non-original candidates).')
    if strategy not in _STRATEGIES:
      raise ValueError(
          f'Unknown candidate sampling strategy {strategy!r}; use one of {_STRATEGIES}.')
    if block_size < 1:
      raise ValueError(f'block_size={block_size} must be >= 1 (vocabulary entries per block).')
    self._num_negatives = num_negatives
    self._strategy = strategy
    self._block_size = block_size

  def build(self, input_shape):
    vocab_size = input_shape[-1]
    if vocab_size is None:
      raise ValueError('CandidateSampler needs logits with a static vocabulary dimension, got '
                       f'shape {input_shape}.')
    if vocab_size - 1 < self._num_negatives:
      raise ValueError(
          f'num_negatives={self._num_negatives} needs at least K + 1 = '
          f'{self._num_negatives + 1} vocabulary entries, got a vocabulary of {vocab_size}.')
    super().build(input_shape)

  def call(self, logits, original_ids, seed):
    """Samples replacements and candidates.

    Args:
      logits: [B, P, V] generator logits at the masked positions (any float dtype).
      original_ids: [B, P] int original token ids x_i.
      seed: [2] int32/int64 stateless seed; equal seeds give equal samples, and each row's
        samples do not depend on the replica split (`replica_random`).

    Returns:
      Dict with
        `replaced_ids`: [B, P] int32 x̂_i ~ P_G(·|x^M), may equal x_i.
        `negative_ids`: [B, P, K] int32, K distinct ids, none equal to x_i (empty for K = 0).
    """
    logits = tf.stop_gradient(tf.cast(logits, tf.float32))
    replace_seed, negative_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, num=2))

    blocked = token_sampling.block_logits(logits, self._block_size)
    # Gumbel-max: x̂ ~ softmax(logits), with noise independent of the negatives'.
    replaced_ids = token_sampling.gumbel_max_sample(blocked, replace_seed)

    if not self._num_negatives:
      return dict(replaced_ids=replaced_ids,
                  negative_ids=tf.zeros(tf.concat([tf.shape(original_ids), [0]], 0), tf.int32))
    # The K best non-original scores are the K + 1 best scores without the original, or their
    # first K when the original is not among them.
    if self._strategy == 'sampled':
      top = token_sampling.gumbel_top_k(blocked, self._num_negatives + 1, negative_seed)
    else:
      top = tf.math.top_k(logits, k=self._num_negatives + 1).indices  # [B, P, K + 1], descending
    is_original = tf.cast(tf.equal(top, tf.cast(original_ids, tf.int32)[..., None]), tf.int32)
    # A stable sort on the flag moves the original, if present, behind the others.
    order = tf.argsort(is_original, axis=-1, stable=True)[..., :self._num_negatives]
    negative_ids = tf.gather(top, order, batch_dims=2)
    return dict(replaced_ids=replaced_ids, negative_ids=negative_ids)

  def get_config(self):
    config = super().get_config()
    config.update(num_negatives=self._num_negatives, strategy=self._strategy,
                  block_size=self._block_size)
    return config
