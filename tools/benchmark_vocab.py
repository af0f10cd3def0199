"""What a vocabulary costs and gives a mini encoder: the measurement behind the mini vocab size.

  python tools/benchmark_vocab.py --vocab_files=a.txt,b.txt,... [--held_out=.../wiki_49.txt]
      [--experiment=bert_mini] [--output=benchmarks/vocab]

For each vocabulary, on held-out text: WordPiece tokens per word and the [UNK] rate (the
BERT tokenizer's, exact: every distinct word is tokenized once and weighted by its count), hence
how many words a training sequence holds; and for `--experiment` with that vocabulary: the kept
encoder's parameters, the share of them in the word embeddings, and the training FLOPs of a
step. A small vocabulary spends fewer parameters and FLOPs on embeddings but splits words
into more pieces, so each sequence holds less text. Writes `<output>.md` and `<output>.json`.
"""

import os

from absl import app
from absl import flags
from absl import logging

from official.core import exp_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.benchmarking import experiment_counts
from teams_tf.data import corpus
from teams_tf.data import tokenization
from teams_tf.preprocessing import vocab_builder
from teams_tf.training import experiment_flops
from teams_tf.utils import atomic_files

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VOCAB_FILES = flags.DEFINE_list('vocab_files', None, 'Vocabularies to compare, one token a line.')
_HELD_OUT = flags.DEFINE_string(
    'held_out',
    os.path.join(_ROOT, '..', 'shared', 'data', 'corpus', 'enwiki_2015_extract', 'wiki_49.txt'),
    'Text the vocabularies are measured on (not used to build them).')
_EXPERIMENT = flags.DEFINE_string('experiment', 'bert_mini',
                                  'Pretraining experiment whose cost is counted.')
_OUTPUT = flags.DEFINE_string('output', os.path.join(_ROOT, 'benchmarks', 'vocab'),
                              'Results path without extension (.md and .json are written).')


def _model_cost(experiment, vocab_size):
  """(kept encoder parameters, word-embedding parameters, training FLOPs per step)."""
  params = exp_factory.get_exp_config(experiment)
  params.task.model.encoder.vocab_size = vocab_size
  encoder = params.task.model.encoder
  embedding = vocab_size * (encoder.embedding_size or encoder.hidden_size)
  return (experiment_counts.count(experiment, vocab_size)['kept_encoder'], embedding,
          experiment_flops.step_flops(params))


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)  # Model Garden logs every encoder's full config.
  if not _VOCAB_FILES.value:
    raise app.UsageError('--vocab_files is required.')
  source = corpus.CorpusSource(input_patterns=_HELD_OUT.value, document_mode='file')
  source.validate()
  counter = vocab_builder.count_words(source, corpus.CorpusStats(), lower_case=True)
  word_counts = counter.counts()
  params = exp_factory.get_exp_config(_EXPERIMENT.value)
  usable = params.task.train_data.seq_length - 2  # [CLS] and [SEP].
  rows = []
  for path in _VOCAB_FILES.value:
    tokens = tokenization.load_vocabulary(path).tokens
    num_tokens, num_unk = vocab_builder.unknown_token_counts(word_counts, tokens)
    kept, embedding, flops = _model_cost(_EXPERIMENT.value, len(tokens))
    per_word = num_tokens / counter.num_words
    rows.append(dict(vocab_file=os.path.abspath(path), vocab_size=len(tokens),
                     tokens_per_word=per_word, unk_rate=num_unk / num_tokens,
                     words_per_sequence=usable / per_word, kept_encoder_parameters=kept,
                     embedding_share=embedding / kept, step_flops=flops))
    print(f'{path}: {len(tokens):,} tokens, {per_word:.3f} tokens/word, '
          f'embeddings {embedding / kept:.0%} of {kept / 1e6:.2f}M parameters', flush=True)
  lines = [
      f'# Vocabulary size for `{_EXPERIMENT.value}`', '',
      f'`python tools/benchmark_vocab.py` on {os.path.basename(_HELD_OUT.value)} '
      f'({counter.num_words:,} words, not used to build any of them); a sequence holds '
      f'{usable} WordPiece tokens.', '',
      '| vocabulary | size | tokens per word | [UNK] rate | words per sequence | '
      'kept encoder | embedding share | training GFLOPs per step |',
      '|---|---:|---:|---:|---:|---:|---:|---:|']
  lines += [f'| {os.path.basename(row["vocab_file"])} | {row["vocab_size"]:,} | '
            f'{row["tokens_per_word"]:.3f} | {row["unk_rate"]:.3%} | '
            f'{row["words_per_sequence"]:.1f} | {row["kept_encoder_parameters"] / 1e6:.2f}M | '
            f'{row["embedding_share"]:.0%} | {row["step_flops"] / 1e9:.1f} |' for row in rows]
  output = _OUTPUT.value
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  atomic_files.write_text(output + '.md', '\n'.join(lines) + '\n')
  atomic_files.write_json(output + '.json', dict(
      experiment=_EXPERIMENT.value, held_out=os.path.abspath(_HELD_OUT.value),
      held_out_words=counter.num_words, rows=rows))
  print(f'wrote {os.path.normpath(output)}.md and .json')


if __name__ == '__main__':
  app.run(main)
