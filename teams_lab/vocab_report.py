"""Rows and the Markdown report of `tools/benchmark_vocab.py`: what a vocabulary costs and gives.

For one vocabulary, on held-out text: WordPiece tokens per word and the [UNK] rate (exact: every
distinct word is tokenized once and weighted by its count), hence how many words a training
sequence holds; and for a registered pretraining experiment with that vocabulary: the kept
encoder's parameters, the share of them in the word embeddings, and the training FLOPs of a step.
The experiments must be registered (import `teams_tf.registry_imports`).
"""

import os

from official.core import exp_factory

from teams_lab import experiment_counts
from teams_tf.data import tokenization
from teams_tf.preprocessing import vocab_builder
from teams_tf.training import experiment_flops


def sequence_tokens(experiment: str) -> int:
  """WordPiece tokens of text a training sequence of `experiment` holds: T less [CLS], [SEP]."""
  return exp_factory.get_exp_config(experiment).task.train_data.seq_length - 2


def measure(vocab_file: str, word_counts: dict[str, int], num_words: int, experiment: str) -> dict:
  """One row of the report.

  Args:
    vocab_file: the vocabulary, one token a line.
    word_counts: the held-out text's words and counts (`vocab_builder.WordCounter.counts`).
    num_words: the held-out text's number of words.
    experiment: the registered pretraining experiment whose cost is counted.

  Returns:
    Dict: `vocab_file` (absolute), `vocab_size`, `tokens_per_word`, `unk_rate` (of the tokens),
    `words_per_sequence`, `kept_encoder_parameters`, `embedding_share` (of those parameters) and
    `step_flops` (training FLOPs of one step).
  """
  tokens = tokenization.load_vocabulary(vocab_file).tokens
  num_tokens, num_unk = vocab_builder.unknown_token_counts(word_counts, tokens)
  params = exp_factory.get_exp_config(experiment)
  params.task.model.encoder.vocab_size = len(tokens)
  encoder = params.task.model.encoder
  embedding = len(tokens) * (encoder.embedding_size or encoder.hidden_size)
  kept = experiment_counts.count(experiment, len(tokens))['kept_encoder']
  per_word = num_tokens / num_words
  return dict(vocab_file=os.path.abspath(vocab_file), vocab_size=len(tokens),
              tokens_per_word=per_word, unk_rate=num_unk / num_tokens,
              words_per_sequence=sequence_tokens(experiment) / per_word,
              kept_encoder_parameters=kept, embedding_share=embedding / kept,
              step_flops=experiment_flops.step_flops(params))


def markdown(experiment: str, held_out: str, num_words: int, rows: list[dict]) -> str:
  """The report: how it was measured, then one table row per `measure` row."""
  lines = [
      f'# Vocabulary size for `{experiment}`', '',
      f'`python tools/benchmark_vocab.py` on {os.path.basename(held_out)} '
      f'({num_words:,} words, not used to build any of them); a sequence holds '
      f'{sequence_tokens(experiment)} WordPiece tokens.', '',
      '| vocabulary | size | tokens per word | [UNK] rate | words per sequence | '
      'kept encoder | embedding share | training GFLOPs per step |',
      '|---|---:|---:|---:|---:|---:|---:|---:|']
  lines += [f'| {os.path.basename(row["vocab_file"])} | {row["vocab_size"]:,} | '
            f'{row["tokens_per_word"]:.3f} | {row["unk_rate"]:.3%} | '
            f'{row["words_per_sequence"]:.1f} | {row["kept_encoder_parameters"] / 1e6:.2f}M | '
            f'{row["embedding_share"]:.0%} | {row["step_flops"] / 1e9:.1f} |' for row in rows]
  return '\n'.join(lines) + '\n'
