"""How likely a pretrained model finds a sentence: one score per method, for every objective.

Each method sums, over a sentence's own tokens x_1..x_n (not [CLS], [SEP] or padding), a
log-probability that the named network gives the token in place:
  masked_lm: Salazar et al. (2020), Eq. (2): PLL(x) = Σ_t log P_MLM(x_t | x_\\t), one pass per
    token with x_t replaced by [MASK]. Networks with an MLM head: BERT's, TACO's and SCRIPT's
    encoder; the generator (auxiliary model) of TEAMS, ELECTRA, MWS-only and COCO-LM.
  masked_lm_word_l2r: Kauf & Ivanova (2023), PLL-word-l2r: as masked_lm, but scoring piece t of
    a word also masks the word's pieces after t, so a word split into pieces is not scored from
    its own later pieces (most words are, with a small vocabulary).
  rtd: Σ_t log D(x_t is original | x) of the discriminator's RTD head (ELECTRA Eq. 2 / TEAMS
    Eq. 4 read as a probability), one pass: TEAMS' and ELECTRA's kept encoder.
  mws: Σ_t log softmax_v(e_v^T q_t)[x_t], TEAMS Eq. (7) with the whole vocabulary as the candidate
    set, one pass: the kept encoder of TEAMS and MWS-only.
  self_critic: SCRIPT Eq. (7), Σ_t log p(t+ | x), one pass: SCRIPT's encoder.
  clm: Σ_t log p_LM(x_t | x) of COCO-LM Eq. (2) (copy and correction) on the unmasked sentence,
    one pass: COCO-LM's main Transformer and CLM head.
The one-pass methods read the encoder users keep; the masked ones read an MLM, which for the
replaced-token objectives is the generator, not what is kept. `SentenceScorer` runs a method over
packed token ids in fixed-size batches; `masked_rows` lays out the masked copies on the host, so
that only a sentence's own tokens are scored and short sentences are not padded to long ones.
"""

import dataclasses
from typing import Callable, Sequence

import numpy as np
import tensorflow as tf

from official.nlp.modeling import models as garden_models

from teams_tf.data import tokenization
from teams_tf.losses import clm
from teams_tf.losses import self_critic
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import mlm_pretrainer
from teams_tf.models import script_pretrainer
from teams_tf.models import teams_pretrainer

MASKED_METHODS = ('masked_lm', 'masked_lm_word_l2r')
ONE_PASS_METHODS = ('rtd', 'mws', 'self_critic', 'clm')
METHODS = MASKED_METHODS + ONE_PASS_METHODS


@dataclasses.dataclass(frozen=True)
class Method:
  """A scoring method bound to one pretrainer.

  Attributes:
    name: one of `METHODS`.
    network: the network it reads, as reports name it ('generator', 'kept encoder', ...).
    token_log_probs: masked methods: (word_ids, input_mask, type_ids [N, T], positions [N],
      targets [N]) -> [N] log-probabilities of `targets` at `positions`; one-pass methods:
      (word_ids, input_mask, type_ids [B, T]) -> [B, T] log-probabilities of the tokens in place.
  """
  name: str
  network: str
  token_log_probs: Callable


def _inputs(word_ids, input_mask, type_ids):
  # Model Garden's BertEncoderV2 takes a dict only; the EncoderScaffolds take it too.
  return dict(input_word_ids=word_ids, input_mask=input_mask, input_type_ids=type_ids)


def _mlm(network, head):
  """log P_MLM(target | masked row) at one position per row, through `network` and `head`."""
  def log_probs(word_ids, input_mask, type_ids, positions, targets):
    sequence = network(_inputs(word_ids, input_mask, type_ids), training=False)['sequence_output']
    logits = head(sequence, positions[:, None])[:, 0]  # [N, V] float32
    return tf.gather(tf.nn.log_softmax(logits), targets, batch_dims=1)
  return log_probs


def _in_place(log_probs_fn):
  """[B, T, V] log-probabilities -> those of the input tokens, [B, T]."""
  def log_probs(word_ids, input_mask, type_ids):
    return tf.gather(log_probs_fn(word_ids, input_mask, type_ids), word_ids, batch_dims=2)
  return log_probs


def _teams_methods(pretrainer):
  methods = {}
  discriminator = pretrainer.discriminator_network
  if pretrainer.rtd_head is not None:
    def rtd(word_ids, input_mask, type_ids):
      outputs = discriminator(_inputs(word_ids, input_mask, type_ids), training=False)
      layer_output = outputs['encoder_outputs'][pretrainer.rtd_head_input_layer - 1]
      logits = pretrainer.rtd_head(layer_output,
                                   pretrainer.attention_mask(layer_output, input_mask),
                                   training=False)
      return tf.math.log_sigmoid(tf.cast(logits, tf.float32))  # Label 1: original.
    methods['rtd'] = Method('rtd', 'discriminator (kept encoder) and RTD head', rtd)
  if pretrainer.mws_head is not None:
    head = pretrainer.mws_head

    def mws(word_ids, input_mask, type_ids):
      sequence = discriminator(_inputs(word_ids, input_mask, type_ids),
                               training=False)['sequence_output']
      if pretrainer.mws_task_layer is not None:
        sequence = pretrainer.mws_task_layer(
            [sequence, pretrainer.attention_mask(sequence, input_mask)], training=False)
      query = head.layer_norm(head.dense(sequence))  # [B, T, E]
      logits = tf.matmul(query, tf.cast(head.embedding_table, query.dtype), transpose_b=True)
      return tf.nn.log_softmax(tf.cast(logits, tf.float32))
    methods['mws'] = Method('mws', 'discriminator (kept encoder) and MWS head', _in_place(mws))
  return methods


def _coco_lm_methods(pretrainer):
  main = pretrainer.discriminator_network
  if not getattr(pretrainer.clm_head, '_with_lm', False):
    return {}

  def corrective_lm(word_ids, input_mask, type_ids):
    sequence = main(_inputs(word_ids, input_mask, type_ids), training=False)['sequence_output']
    head = pretrainer.clm_head(sequence)
    return clm.input_token_log_prob(head['clm_logits'], head['copy_logits'], word_ids)
  return {'clm': Method('clm', 'main Transformer (kept encoder) and CLM head', corrective_lm)}


def methods(pretrainer) -> dict[str, Method]:
  """The methods a built pretrainer supports, by name.

  Raises:
    ValueError: a model that is none of this project's pretrainers.
  """
  if isinstance(pretrainer, teams_pretrainer.TeamsPretrainer):
    network, extra, reads = pretrainer.generator_network, _teams_methods(pretrainer), 'generator'
  elif isinstance(pretrainer, coco_lm_pretrainer.CocoLmPretrainer):
    network, extra, reads = (pretrainer.generator_network, _coco_lm_methods(pretrainer),
                             'auxiliary model')
  elif isinstance(pretrainer, (mlm_pretrainer.SingleEncoderPretrainer,
                               garden_models.BertPretrainerV2)):
    network, extra, reads = pretrainer.encoder_network, {}, 'kept encoder'
    if isinstance(pretrainer, script_pretrainer.ScriptPretrainer):
      def critic(word_ids, input_mask, type_ids):
        log_odds, _ = pretrainer.critic_log_odds(_inputs(word_ids, input_mask, type_ids),
                                                 training=False)
        return self_critic.log_p_original(log_odds)
      extra = {'self_critic': Method('self_critic', 'kept encoder (self-critic)', critic)}
  else:
    raise ValueError(f'{type(pretrainer).__name__} is not a teams_tf pretrainer.')
  found = {}
  if network is not None:  # COCO-LM's "w. Random Replacements" has no auxiliary model.
    mlm = _mlm(network, pretrainer.masked_lm)
    found = {name: Method(name, f'{reads} and MLM head', mlm) for name in MASKED_METHODS}
  return found | extra


def masked_rows(word_ids: np.ndarray, weights: np.ndarray, mask_id: int,
                continuation: np.ndarray = None):
  """The masked copies a masked method scores: one row per counted token of every sentence.

  Args:
    word_ids: [B, T] int packed sentences.
    weights: [B, T], nonzero at the tokens that count.
    mask_id: id of [MASK].
    continuation: None for masked_lm; for masked_lm_word_l2r, [B, T] bool, True at the pieces
      that continue the word before them (`##...`): scoring piece t also masks the pieces of
      t's word after it.

  Returns:
    (rows [N, T] int32, sentence [N] int, position [N] int32, target [N] int32): row i is
    sentence[i] with position[i] (and, word_l2r, its word's later pieces) masked; target[i] is
    the token there.
  """
  sentence, position = np.nonzero(weights)
  rows = word_ids[sentence].astype(np.int32)
  rows[np.arange(len(sentence)), position] = mask_id
  if continuation is not None:
    later = np.zeros_like(rows, dtype=bool)
    columns = np.arange(word_ids.shape[1])
    for i, (b, t) in enumerate(zip(sentence, position)):
      # The word goes on while the pieces after t continue it.
      run = continuation[b, t + 1:]
      length = len(run) if run.all() else int(np.argmin(run))
      later[i] = (columns > t) & (columns <= t + length)
    rows[later] = mask_id
  return rows, sentence, position.astype(np.int32), word_ids[sentence, position].astype(np.int32)


def packed_texts(tokenizer, vocab, texts: Sequence[str], seq_length: int):
  """Raw texts as a `SentenceScorer` takes them (`[CLS] text [SEP]`, `tokenization.pack_texts`).

  Returns:
    [B, T] int32 word ids and input mask, and [B, T] float32 weights of each text's own tokens
    (the tokens a score sums over), as NumPy arrays.
  """
  inputs, weights = tokenization.pack_texts(tokenizer, vocab, tf.constant(list(texts)),
                                            seq_length)
  return inputs['input_word_ids'].numpy(), inputs['input_mask'].numpy(), weights.numpy()


_IDS = tf.TensorSpec([None, None], tf.int32)
_VECTOR = tf.TensorSpec([None], tf.int32)
# With XLA, row lengths are rounded up to a multiple of this, so that batches of similar
# sentences share one compiled program; without it, every length runs the same graph.
_LENGTH_QUANTUM = 8


def _padded(arrays, rows):
  """Each [N, ...] array padded to `rows` rows with copies of its first (outputs discarded)."""
  return [np.concatenate([a, np.repeat(a[:1], rows - len(a), axis=0)]) if len(a) < rows else a
          for a in arrays]


class SentenceScorer:
  """Scores packed sentences with one `Method`, `batch_size` rows (masked copies) at a time.

  Rows are scored shortest first, each batch cut to its longest row. With `jit_compile`, each
  forward pass is one XLA program per row length (a multiple of 8 up to T), every batch padded to
  `batch_size` rows so that the shapes repeat.
  """

  def __init__(self, method: Method, vocab, batch_size: int = 256, jit_compile: bool = False):
    """Args: the method, the model's `tokenization.Vocabulary`, rows per pass, XLA."""
    if batch_size < 1:
      raise ValueError(f'batch_size={batch_size} must be >= 1.')
    self.method = method
    self._vocab = vocab
    self._batch_size = batch_size
    self._jit_compile = jit_compile
    self._continuation = np.asarray(vocab.continuation_ids, np.int32)
    signature = ([_IDS] * 3 + [_VECTOR] * 2 if method.name in MASKED_METHODS else [_IDS] * 3)
    self._log_probs = tf.function(method.token_log_probs, input_signature=signature,
                                  jit_compile=jit_compile)

  def _run(self, *arrays):
    """The method on one chunk of rows (trimmed to their longest, padded for XLA)."""
    rows = len(arrays[0])
    length = int(arrays[1].sum(axis=1).max())
    if self._jit_compile:
      length = min(arrays[0].shape[1], -(-length // _LENGTH_QUANTUM) * _LENGTH_QUANTUM)
    arrays = [a[:, :length] if a.ndim == 2 else a for a in arrays]
    if self._jit_compile:
      arrays = _padded(arrays, self._batch_size)
    return self._log_probs(*arrays).numpy()[:rows], length

  def __call__(self, word_ids: np.ndarray, input_mask: np.ndarray,
               weights: np.ndarray) -> np.ndarray:
    """[B] float64 scores of packed sentences ([B, T] ids, mask, counted-token weights)."""
    word_ids, input_mask = np.asarray(word_ids, np.int32), np.asarray(input_mask, np.int32)
    weights = np.asarray(weights)
    scores = np.zeros(len(word_ids))
    if self.method.name in MASKED_METHODS:
      continuation = (np.isin(word_ids, self._continuation)
                      if self.method.name == 'masked_lm_word_l2r' else None)
      rows, sentence, position, target = masked_rows(word_ids, weights, self._vocab.mask_id,
                                                     continuation)
      # Shortest first, so that a batch's rows are padded to lengths close to their own.
      order = np.argsort(input_mask.sum(axis=1)[sentence], kind='stable')
      rows, sentence, position, target = (a[order] for a in (rows, sentence, position, target))
      for start in range(0, len(rows), self._batch_size):
        chunk = slice(start, start + self._batch_size)
        mask = input_mask[sentence[chunk]]
        log_probs, _ = self._run(rows[chunk], mask, np.zeros_like(mask), position[chunk],
                                 target[chunk])
        np.add.at(scores, sentence[chunk], log_probs)
      return scores
    for start in range(0, len(word_ids), self._batch_size):
      chunk = slice(start, start + self._batch_size)
      log_probs, length = self._run(word_ids[chunk], input_mask[chunk],
                                    np.zeros_like(word_ids[chunk]))
      scores[chunk] = (log_probs * weights[chunk, :length]).sum(axis=1)
    return scores
