"""Pseudo-log-likelihood of sentences under a SCRIPT model: self-critic (one pass) and masked-LM.

`self_critic` is SCRIPT's Eq. (7): Σ_t log p(t+ | x), one encoder pass over the unmasked sentence.
`masked_lm` is the classic PLL of Salazar et al. (2020): Σ_t log p_MLM(x_t | x with x_t masked),
one pass per token, the reference SCRIPT's is compared against. Both sum over the sentence's own
tokens (not [CLS], [SEP] or padding). `PllScorer` serves both from raw text in a SavedModel;
loading it needs `import tensorflow_text`, which registers the tokenizer ops.
"""

import dataclasses

import tensorflow as tf

from official.core import export_base

from teams_tf.data import tokenization
from teams_tf.losses import self_critic


def self_critic_pll(pretrainer, inputs, weights):
  """SCRIPT Eq. (7) for a batch, in one forward pass.

  Args:
    pretrainer: a `ScriptPretrainer`.
    inputs: dict of [B, T] int32 `input_word_ids`, `input_mask`, `input_type_ids` (unmasked).
    weights: [B, T] float, 1 for the tokens that count.

  Returns:
    [B] float32 PLL.
  """
  log_odds, _ = pretrainer.critic_log_odds(inputs, training=False)
  return self_critic.pseudo_log_likelihood(log_odds, weights)


def masked_lm_pll(pretrainer, inputs, weights, mask_id):
  """Salazar et al.'s PLL: each counted token masked in turn, T copies of every sentence.

  Args:
    pretrainer: a `ScriptPretrainer` (any model with its `scores(inputs, positions)`).
    inputs: dict of [B, T] int32 `input_word_ids`, `input_mask`, `input_type_ids` (unmasked).
    weights: [B, T] float, 1 for the tokens that count.
    mask_id: id of [MASK].

  Returns:
    [B] float32 Σ_t log p_MLM(x_t | x_{\\t}).
  """
  word_ids = inputs['input_word_ids']
  batch_size, seq_length = tf.shape(word_ids)[0], tf.shape(word_ids)[1]

  def copies(values):  # [B, T] -> [B * T, T], copy t of sentence b at row b * T + t.
    return tf.reshape(tf.repeat(values[:, None, :], seq_length, axis=1), [-1, seq_length])

  is_target = tf.tile(tf.eye(seq_length, dtype=tf.bool), [batch_size, 1])  # [B * T, T]
  masked = dict(input_word_ids=tf.where(is_target, mask_id, copies(word_ids)),
                input_mask=copies(inputs['input_mask']),
                input_type_ids=copies(inputs['input_type_ids']))
  positions = tf.tile(tf.range(seq_length), [batch_size])[:, None]  # [B * T, 1]
  scores, _ = pretrainer.scores(masked, positions, training=False)  # [B * T, 1, V]
  log_probs = tf.nn.log_softmax(scores[:, 0], axis=-1)
  target_log_probs = tf.gather(log_probs, tf.reshape(word_ids, [-1]), batch_dims=1)
  return tf.reduce_sum(tf.reshape(target_log_probs, [batch_size, seq_length]) *
                       tf.cast(weights, tf.float32), axis=-1)


@dataclasses.dataclass(frozen=True)
class PllScorerParams:
  """Serving settings: the model's vocabulary and casing, and T (longer texts are truncated)."""
  vocab_file: str
  lower_case: bool
  seq_length: int


class PllScorer(export_base.ExportModule):
  """Scores raw sentences with both PLLs; `serve_text` is the SavedModel's default signature."""

  def __init__(self, pretrainer, params: PllScorerParams):
    """Wraps a SCRIPT pretrainer.

    Raises:
      ValueError: seq_length < 3.
    """
    if params.seq_length < 3:
      raise ValueError(f'seq_length={params.seq_length} must be >= 3 ([CLS], a token, [SEP]).')
    super().__init__(params, pretrainer)
    self._vocab = tokenization.load_vocabulary(params.vocab_file)
    self._tokenizer = tokenization.build_tokenizer(self._vocab, params.lower_case)

  def pack(self, text):
    """[B] strings -> (dict of [B, T] int32 encoder inputs, [B, T] float32 counted tokens)."""
    return tokenization.pack_texts(self._tokenizer, self._vocab, text, self.params.seq_length)

  @tf.function
  def serve(self, input_word_ids, input_mask, input_type_ids):
    """Both PLLs of packed token ids ([B, T] int32 each); [CLS]/[SEP]/padding do not count."""
    inputs = dict(input_word_ids=input_word_ids, input_mask=input_mask,
                  input_type_ids=input_type_ids)
    weights = tokenization.text_token_weights(input_word_ids, input_mask, self._vocab)
    return self._score(inputs, weights)

  @tf.function
  def serve_text(self, text):
    """Both PLLs of raw sentences.

    Args:
      text: [B] string, one sentence (or passage) per element; longer than T - 2 tokens is
        truncated.

    Returns:
      `pll` [B] float32 (SCRIPT Eq. 7, one pass), `masked_lm_pll` [B] float32 (Salazar et al., T
      passes) and `num_tokens` [B] int32 (the tokens summed over).
    """
    inputs, weights = self.pack(text)
    return self._score(inputs, weights)

  def _score(self, inputs, weights):
    return dict(pll=self_critic_pll(self.model, inputs, weights),
                masked_lm_pll=masked_lm_pll(self.model, inputs, weights, self._vocab.mask_id),
                num_tokens=tf.cast(tf.reduce_sum(weights, -1), tf.int32))

  def get_inference_signatures(self, function_keys):
    """Concrete functions for `serve` (token ids) and `serve_text` (raw text)."""
    ids = tf.TensorSpec([None, None], tf.int32)
    signatures = {}
    for name, key in function_keys.items():
      if name == 'serve':
        signatures[key] = self.serve.get_concrete_function(ids, ids, ids)
      elif name == 'serve_text':
        signatures[key] = self.serve_text.get_concrete_function(tf.TensorSpec([None], tf.string))
      else:
        raise ValueError(f'Unknown function key {name!r}; use serve or serve_text.')
    return signatures
