"""Zero-shot minimal pairs (BLiMP): does a model score the acceptable sentence higher?

Input is BLiMP's format (Warstadt et al. 2020): one `<paradigm>.jsonl` per paradigm, one pair a
line with `sentence_good`, `sentence_bad`, `UID` and `linguistics_term` (the phenomenon). A pair
counts as right only when the good sentence scores strictly higher (a tie is wrong). Reported per
paradigm, per phenomenon (mean over its paradigms) and as the mean over paradigms, BLiMP's
headline. Sentences are scored by any `score_texts([str]) -> [float]`: a model's
`sentence_scoring` method (`text_scorer`), or the context-free `UnigramScorer`.
"""

import collections
import dataclasses
import glob
import json
import os
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from teams_tf.data import tokenization
from teams_tf.serving import sentence_scoring
from teams_tf.utils import progress

# The BLiMP paper's own results file, beside the paradigms (not a paradigm).
PAPER_RESULTS = 'models_summary.jsonl'
# Its models, as the paper names them (full-sentence log-probability under each LM).
PAPER_MODELS = {'ngram': '5-gram (BLiMP paper)', 'lstm': 'LSTM LM (BLiMP paper)',
                'txl': 'Transformer-XL (BLiMP paper)', 'gpt2': 'GPT-2 (BLiMP paper)'}


@dataclasses.dataclass(frozen=True)
class Paradigm:
  """One BLiMP paradigm: its pairs, good and bad sentences in the same order."""
  uid: str
  phenomenon: str
  good: tuple[str, ...]
  bad: tuple[str, ...]


def read_paradigms(directory: str, max_pairs: Optional[int] = None) -> list[Paradigm]:
  """The paradigms of `directory/*.jsonl` sorted by UID, each cut to its first `max_pairs` pairs.

  Raises:
    ValueError: no paradigm file, or a line without the BLiMP fields (file and line named).
  """
  paths = sorted(p for p in glob.glob(os.path.join(directory, '*.jsonl'))
                 if os.path.basename(p) != PAPER_RESULTS)
  if not paths:
    raise ValueError(f'{directory} holds no <paradigm>.jsonl file (BLiMP format).')
  paradigms = []
  for path in paths:
    good, bad, names = [], [], set()
    with open(path, encoding='utf-8') as f:
      for number, line in enumerate(f, 1):
        if max_pairs is not None and len(good) >= max_pairs:
          break
        try:
          pair = json.loads(line)
          good.append(pair['sentence_good'])
          bad.append(pair['sentence_bad'])
          names.add((pair['UID'], pair['linguistics_term']))
        except (json.JSONDecodeError, KeyError) as e:
          raise ValueError(f'{path}:{number} is not a BLiMP pair with sentence_good, '
                           f'sentence_bad, UID and linguistics_term: {e}') from e
    if len(names) != 1:
      raise ValueError(f'{path} mixes paradigms {sorted(names)}; one file holds one.')
    (uid, phenomenon), = names
    paradigms.append(Paradigm(uid, phenomenon, tuple(good), tuple(bad)))
  return paradigms


def pair_outcomes(score_texts: Callable[[Sequence[str]], np.ndarray], paradigms: list[Paradigm],
                  batch_size: int = 2048,
                  log: Callable[[str], None] = print) -> dict[str, np.ndarray]:
  """Paradigm UID -> [pairs] bool, True where the good sentence scores strictly higher.

  Every distinct sentence is scored once, in batches of `batch_size` sentences of similar
  length (by characters), with a progress line (sentences/s, ETA) about every 10 seconds.
  """
  sentences = sorted({s for p in paradigms for s in p.good + p.bad}, key=len)
  scores = {}
  meter = progress.ProgressMeter(interval_seconds=10)
  for start in range(0, len(sentences), batch_size):
    batch = sentences[start:start + batch_size]
    scores.update(zip(batch, score_texts(batch)))
    done = start + len(batch)
    if meter.due() or done == len(sentences):
      log(f'scored {done:,} of {len(sentences):,} sentences ({meter.rate(done):,.0f}/s), '
          f'{meter.timing(done / len(sentences))}')
  return {p.uid: np.array([scores[g] > scores[b] for g, b in zip(p.good, p.bad)], bool)
          for p in paradigms}


def accuracies(outcomes: dict[str, np.ndarray]) -> dict[str, float]:
  """Paradigm UID -> share of its pairs that are right (`pair_outcomes`)."""
  return {uid: float(np.mean(right)) for uid, right in outcomes.items()}


def outcome_bits(outcomes: dict[str, np.ndarray]) -> dict[str, str]:
  """`pair_outcomes` as one '0'/'1' string per paradigm, in pair order: what a results file
  keeps for paired comparisons (a bootstrap over pairs) at one byte a pair."""
  return {uid: ''.join('1' if r else '0' for r in right) for uid, right in outcomes.items()}


def summarize(paradigms: list[Paradigm], by_uid: dict[str, float]) -> dict:
  """{'mean': mean over paradigms, 'phenomena': {phenomenon: mean over its paradigms}}."""
  phenomena = collections.defaultdict(list)
  for paradigm in paradigms:
    phenomena[paradigm.phenomenon].append(by_uid[paradigm.uid])
  return dict(mean=float(np.mean([by_uid[p.uid] for p in paradigms])),
              phenomena={name: float(np.mean(values))
                         for name, values in sorted(phenomena.items())})


def paper_results(directory: str, paradigms: list[Paradigm]) -> dict[str, dict[str, float]]:
  """The BLiMP paper's accuracies of its models on `paradigms`: model -> {UID: accuracy}.

  Raises:
    ValueError: `models_summary.jsonl` is missing, or lacks one of the paradigms.
  """
  path = os.path.join(directory, PAPER_RESULTS)
  if not os.path.exists(path):
    raise ValueError(f'{path} is missing: it holds the BLiMP paper\'s results '
                     '(alexwarstadt/blimp raw_results/summary/models_summary.jsonl).')
  rows = {}
  with open(path, encoding='utf-8') as f:
    for line in f:
      row = json.loads(line)
      if 'UID' in row:
        rows[row['UID']] = row
  missing = [p.uid for p in paradigms if p.uid not in rows]
  if missing:
    raise ValueError(f'{path} has no results for {missing}.')
  return {model: {p.uid: rows[p.uid][model] for p in paradigms} for model in PAPER_MODELS}


def text_scorer(scorer, vocab: tokenization.Vocabulary, lower_case: bool,
                seq_length: int) -> Callable[[Sequence[str]], np.ndarray]:
  """`score_texts` of a `sentence_scoring.SentenceScorer`: raw text packed as `[CLS] s [SEP]`."""
  tokenizer = tokenization.build_tokenizer(vocab, lower_case)

  def score_texts(texts):
    return scorer(*sentence_scoring.packed_texts(tokenizer, vocab, texts, seq_length))
  return score_texts


class UnigramScorer:
  """Σ_t log p(x_t) under the add-one unigram distribution of a corpus's WordPiece tokens.

  The context-free floor: a model that read nothing but token frequencies. Longer sentences
  score lower, as under any language model.
  """

  def __init__(self, vocab: tokenization.Vocabulary, lower_case: bool, files: Sequence[str],
               log: Callable[[str], None] = print):
    """Counts the tokens of every line of `files` with `vocab`'s tokenizer."""
    self._vocab = vocab
    self._tokenizer = tokenization.build_tokenizer(vocab, lower_case)
    counts = np.zeros(vocab.size, np.int64)
    lines = tf.data.TextLineDataset(list(files)).batch(4096)
    for batch in lines:
      ids = self._tokenizer.tokenize(batch).merge_dims(1, -1).flat_values.numpy()
      counts += np.bincount(ids, minlength=vocab.size)
    self.num_tokens = int(counts.sum())
    log(f'unigram counts: {self.num_tokens:,} tokens of {len(files)} file(s)')
    self._log_p = np.log((counts + 1) / (self.num_tokens + vocab.size))

  def __call__(self, texts: Sequence[str]) -> np.ndarray:
    ids = self._tokenizer.tokenize(tf.constant(list(texts))).merge_dims(1, -1).to_list()
    return np.array([self._log_p[row].sum() for row in ids])
