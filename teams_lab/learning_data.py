"""The learning benchmark's data: the corpus vocabulary and unmasked records, built once.

Every run of the benchmark (and of the releases) trains on wiki_00-48 of the shared Wikipedia
extract and is evaluated on wiki_49, with a WordPiece vocabulary learned from the training files.
`prepare_data` builds what is missing under the work directory and keeps what a previous call
completed.
"""

import os
import time

from teams_tf.data import corpus
from teams_tf.preprocessing import pretraining_records
from teams_tf.preprocessing import record_format
from teams_tf.preprocessing import vocab_builder


def vocab_path(work_dir: str, vocab_size: int) -> str:
  """Where `prepare_data` keeps the corpus vocabulary of target size `vocab_size`."""
  return os.path.join(work_dir, f'vocab_{vocab_size}.txt')


def prepare_data(corpus_dir: str, work_dir: str, vocab_size: int,
                 seq_length: int) -> tuple[str, str, str]:
  """Builds, once, the corpus vocabulary and unmasked records of every run under `work_dir`.

  The vocabulary is learned from wiki_00-48 as `tools/build_vocab.py` learns it; the records of
  wiki_00-48 (training) and wiki_49 (held out) are written as `tools/create_pretraining_data.py`
  writes them with its defaults, on every core. Each step prints what it builds, logs its
  progress and prints the tool's summary. Whatever a previous call completed is kept.

  Args:
    corpus_dir: directory of wiki_00.txt ... wiki_49.txt.
    work_dir: gets `vocab_<vocab_size>.txt` and `records_<vocab_size>_{train,valid}/`.
    vocab_size: target size of the vocabulary.
    seq_length: T of the records.

  Returns:
    (vocabulary file, training records pattern, held-out records pattern).

  Raises:
    ValueError: `corpus_dir` lacks one of the 50 files.
  """
  names = [f'wiki_{i:02d}.txt' for i in range(50)]
  missing = [name for name in names if not os.path.exists(os.path.join(corpus_dir, name))]
  if missing:
    raise ValueError(f'--corpus_dir={corpus_dir} lacks {", ".join(missing[:3])}...; point it at '
                     'the shared Wikipedia extract (shared/data/corpus/enwiki_2015_extract).')
  train_files = ','.join(os.path.join(corpus_dir, name) for name in names[:49])
  held_out = os.path.join(corpus_dir, names[49])
  vocab = vocab_path(work_dir, vocab_size)
  if not os.path.exists(vocab):
    print(f'building the corpus vocabulary {vocab} from wiki_00-48', flush=True)
    # Every non-blank line is text, so the document grouping does not matter; 'file' keeps no state.
    source = corpus.CorpusSource(input_patterns=train_files, document_mode='file')
    print(vocab_builder.build_vocabulary(source, vocab, vocab_size), flush=True)
  records = {}
  for split, files in (('train', train_files), ('valid', held_out)):
    out = os.path.join(work_dir, f'records_{vocab_size}_{split}')
    # The summary is written last: without it the directory holds an interrupted run.
    if not os.path.exists(os.path.join(out, 'pretrain-summary.json')):
      print(f'writing the {split} records {out}', flush=True)
      start = time.monotonic()
      summary = pretraining_records.create_pretraining_data(
          corpus.CorpusSource(input_patterns=files),
          record_format.RecordOptions(vocab_file=vocab, seq_length=seq_length,
                                      output_kind='unmasked'),
          out, num_shards=8, num_workers=os.cpu_count() or 1, overwrite=True)
      print(pretraining_records.summary_text(summary, out, time.monotonic() - start), flush=True)
    records[split] = os.path.join(out, 'pretrain-*.tfrecord')
  return vocab, records['train'], records['valid']
