"""TACO's diagnostic of contextualized representations (Su et al., 2022, §2.2, Appendix B).

For every token w_i of a text, a token w_j (j ≠ i) of the same context and a token w_k of another
context are drawn at random; the intra-context similarity is the mean cos(h_i, h_j), the
inter-context similarity the mean cos(h_i, h_k), and the *contextual score* their gap (TACO
Figures 3 and 6). h is the kept encoder's last layer; [CLS], [SEP] and padding are not tokens of
the text.
"""

import dataclasses
from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from teams_tf.data import tokenization
from teams_tf.utils import progress


@dataclasses.dataclass
class ContextualSimilarity:
  """Running sums of the intra- and inter-context cosines."""
  intra_sum: float = 0.0
  inter_sum: float = 0.0
  count: int = 0

  @property
  def intra(self):
    """Mean intra-context cosine (NaN before any pair)."""
    return self.intra_sum / self.count if self.count else float('nan')

  @property
  def inter(self):
    """Mean inter-context cosine (NaN before any pair)."""
    return self.inter_sum / self.count if self.count else float('nan')

  @property
  def score(self):
    """The contextual score: intra minus inter."""
    return self.intra - self.inter


def sample_pairs(weights, rng):
  """Draws, for every token, one other token of its row and one token of another row.

  Args:
    weights: [B, T] array, nonzero for the tokens of each context.
    rng: a NumPy Generator.

  Returns:
    (anchors, intra, inter): [N, 2] int arrays of (row, position); N counts the tokens whose row
    has another token and whose batch has another non-empty row.
  """
  tokens = [np.flatnonzero(row) for row in np.asarray(weights)]
  rows = [b for b, positions in enumerate(tokens) if len(positions)]
  anchors, intra, inter = [], [], []
  for b in rows:
    others = [r for r in rows if r != b]
    if len(tokens[b]) < 2 or not others:
      continue
    for i in tokens[b]:
      candidates = tokens[b][tokens[b] != i]
      other = others[rng.integers(len(others))]
      anchors.append((b, i))
      intra.append((b, candidates[rng.integers(len(candidates))]))
      inter.append((other, tokens[other][rng.integers(len(tokens[other]))]))
  shape = (len(anchors), 2)
  return tuple(np.array(pairs, np.int64).reshape(shape) for pairs in (anchors, intra, inter))


def update(similarity, sequence_output, weights, rng):
  """Adds one batch's pairs to `similarity`.

  Args:
    similarity: a `ContextualSimilarity`, updated in place.
    sequence_output: [B, T, H] array of contextualized representations.
    weights: [B, T] array, nonzero for the tokens of each context.
    rng: a NumPy Generator.
  """
  anchors, intra, inter = sample_pairs(weights, rng)
  if not len(anchors):
    return
  vectors = np.asarray(sequence_output, np.float64)
  vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)

  def rows(pairs):
    return vectors[pairs[:, 0], pairs[:, 1]]

  similarity.intra_sum += float(np.sum(rows(anchors) * rows(intra)))
  similarity.inter_sum += float(np.sum(rows(anchors) * rows(inter)))
  similarity.count += len(anchors)


def score_contexts(encoder, vocab: tokenization.Vocabulary, lower_case: bool,
                   contexts: list[str], seq_length: int, batch_size: int, seed: int,
                   log: Optional[Callable[[str], None]] = None) -> ContextualSimilarity:
  """The contextual similarity of an encoder over texts, one context each.

  Args:
    encoder: a kept encoder (`serving.loaders.restore_pretrained_encoder`) with dict outputs.
    vocab, lower_case: its tokenization.
    contexts: the texts, each truncated to `seq_length` tokens with [CLS] and [SEP].
    seq_length: T.
    batch_size: contexts per forward pass; inter-context pairs come from the same batch.
    seed: seed of the pair sampling.
    log: called with a progress line (contexts/s, ETA) now and then.

  Raises:
    ValueError: `batch_size` < 2.
  """
  if batch_size < 2:
    raise ValueError(f'--batch_size={batch_size} must be >= 2: inter-context pairs need two '
                     'contexts in a batch.')
  tokenizer = tokenization.build_tokenizer(vocab, lower_case)

  @tf.function
  def represent(texts):
    inputs, weights = tokenization.pack_texts(tokenizer, vocab, texts, seq_length)
    return encoder(inputs)['sequence_output'], weights

  similarity = ContextualSimilarity()
  rng = np.random.default_rng(seed)
  meter = progress.ProgressMeter()
  for begin in range(0, len(contexts), batch_size):
    outputs, weights = represent(tf.constant(contexts[begin:begin + batch_size]))
    update(similarity, outputs.numpy(), weights.numpy(), rng)
    done = min(begin + batch_size, len(contexts))
    if log and meter.due():
      log(f'{done:,}/{len(contexts):,} contexts, {meter.rate(done):,.1f} contexts/s, '
          f'{meter.timing(done / len(contexts))}')
  return similarity
