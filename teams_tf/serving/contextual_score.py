"""TACO's diagnostic of contextualized representations (Su et al., 2022, §2.2, Appendix B).

For every token w_i of a text, a token w_j (j ≠ i) of the same context and a token w_k of another
context are drawn at random; the intra-context similarity is the mean cos(h_i, h_j), the
inter-context similarity the mean cos(h_i, h_k), and the *contextual score* their gap (TACO
Figures 3 and 6). h is the kept encoder's last layer; [CLS], [SEP] and padding are not tokens of
the text.
"""

import dataclasses

import numpy as np


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
