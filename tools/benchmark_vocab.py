"""What a vocabulary costs and gives a mini encoder: the measurement behind the mini vocab size.

  python tools/benchmark_vocab.py --vocab_files=a.txt,b.txt,... --held_out=.../wiki_49.txt
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
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import vocab_report
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import corpus
from teams_tf.preprocessing import vocab_builder
from teams_tf.utils import atomic_files
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VOCAB_FILES = flags.DEFINE_list('vocab_files', None, 'Vocabularies to compare, one token a line.')
_HELD_OUT = flags.DEFINE_string(
    'held_out', None, 'Text the vocabularies are measured on (not used to build them)')
_EXPERIMENT = flags.DEFINE_string('experiment', 'bert_mini',
                                  'Pretraining experiment whose cost is counted.')
_OUTPUT = flags.DEFINE_string('output', os.path.join(_ROOT, 'benchmarks', 'vocab'),
                              'Results path without extension (.md and .json are written).')


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)  # Model Garden logs every encoder's full config.
  if not _VOCAB_FILES.value:
    raise app.UsageError('--vocab_files is required.')
  held_out = command_lines.required(_HELD_OUT,
                                    '../shared/data/corpus/enwiki_2015_extract/wiki_49.txt')
  source = corpus.CorpusSource(input_patterns=held_out, document_mode='file')
  source.validate()
  counter = vocab_builder.count_words(source, corpus.CorpusStats(), lower_case=True)
  word_counts = counter.counts()
  rows = []
  for path in _VOCAB_FILES.value:
    row = vocab_report.measure(path, word_counts, counter.num_words, _EXPERIMENT.value)
    rows.append(row)
    kept = row['kept_encoder_parameters']
    print(f'{path}: {row["vocab_size"]:,} tokens, {row["tokens_per_word"]:.3f} tokens/word, '
          f'embeddings {row["embedding_share"]:.0%} of {kept / 1e6:.2f}M parameters', flush=True)
  output = _OUTPUT.value
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  atomic_files.write_text(output + '.md', vocab_report.markdown(
      _EXPERIMENT.value, held_out, counter.num_words, rows))
  atomic_files.write_json(output + '.json', dict(
      experiment=_EXPERIMENT.value, held_out=os.path.abspath(held_out),
      held_out_words=counter.num_words, rows=rows))
  print(f'wrote {os.path.normpath(output)}.md and .json')


if __name__ == '__main__':
  app.run(main)
