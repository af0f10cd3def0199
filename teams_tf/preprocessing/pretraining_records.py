"""Writes pretraining TFRecords from a text corpus: `tools/create_pretraining_data.py`'s library.

Pipeline: (1) each input file is read (`corpus`), tokenized and packed (`sequence_packing`) in a
worker process, in parallel, results kept in file order; (2) the sequences, or for masked output
`dupe_factor` copies of each, are shuffled with `seed` and cut into `num_shards` contiguous shards;
(3) each shard is masked (`masking.mask_tokens`, the function of the dynamic path, in a tf.data map
with the stateless seed fold_in(fold_in([seed, 0], sequence index), copy index)) and written, in
parallel. Every random choice is seeded by what it concerns (file, document, sequence, copy), never
by which worker does it, so the shards are byte-identical for a fixed seed and any `num_workers`.
Workers use the 'spawn' start method because TensorFlow is not fork-safe.

Each shard is written to a hidden temporary name (`.<shard name>.incomplete`, deleted if the run
fails) and renamed when complete, and the JSON summary `<prefix>-summary.json` is written last: a
file with a final shard name is always complete, and a directory without the summary holds an
interrupted run.

The records' features and options: `record_format`.
"""

import dataclasses
import functools
import multiprocessing
import os
import shutil
import tempfile

from absl import logging
import numpy as np
import tensorflow as tf

from teams_tf.data import corpus
from teams_tf.data import masking
from teams_tf.data import tokenization
from teams_tf.preprocessing import record_format
from teams_tf.preprocessing import sequence_packing
from teams_tf.utils import atomic_files
from teams_tf.utils import file_hashes
from teams_tf.utils import progress

# Sequences masked per tf.data input chunk; bounds memory, never changes the output.
_CHUNK_SIZE = 8192


# Cached so that each worker process reads the vocabulary and builds its tokenizer once, not once
# per file or shard.
@functools.lru_cache(maxsize=1)
def _vocabulary(path: str) -> tokenization.Vocabulary:
  return tokenization.load_vocabulary(path)


@functools.lru_cache(maxsize=1)
def _packer(options: record_format.RecordOptions) -> sequence_packing.SequencePacker:
  return sequence_packing.SequencePacker(_vocabulary(options.vocab_file), options.lower_case,
                                         options.seq_length, options.num_segments, options.seed)


def _pack_file(task):
  """Worker: (file index, path, document mode, options) ->
  (sequences, CorpusStats, PackingStats)."""
  index, path, document_mode, options = task
  corpus_stats, packing_stats = corpus.CorpusStats(), sequence_packing.PackingStats()
  documents = corpus.read_file_documents(path, document_mode, corpus_stats)
  sequences = _packer(options).pack(documents, path, index, packing_stats)
  return sequences, corpus_stats, packing_stats


def _masked_batches(options, input_ids, sequence_index, copy_index):
  """Yields masking.mask_tokens outputs for the rows `input_ids[sequence_index]`, batched."""
  vocab = _vocabulary(options.vocab_file)
  seq_length = options.seq_length

  def chunks():
    for start in range(0, len(sequence_index), _CHUNK_SIZE):
      rows = sequence_index[start:start + _CHUNK_SIZE]
      yield input_ids[rows], rows, copy_index[start:start + _CHUNK_SIZE]

  base_seed = tf.constant([options.seed, 0], tf.int64)
  # Passed only when asked for, so plain masking calls mask_tokens exactly as the dynamic path does.
  kwargs = {'continuation_ids': vocab.continuation_ids} if options.whole_word_masking else {}

  def mask(token_ids, sequence, copy):
    seed = tf.random.experimental.stateless_fold_in(
        tf.random.experimental.stateless_fold_in(base_seed, sequence), copy)
    return masking.mask_tokens(
        token_ids, seed, max_predictions_per_seq=options.max_predictions_per_seq,
        special_ids=vocab.special_ids, mask_id=vocab.mask_id, vocab_size=vocab.size,
        mask_rate=options.mask_rate, mask_token_rate=options.mask_token_rate,
        random_token_rate=options.random_token_rate, **kwargs)

  dataset = tf.data.Dataset.from_generator(chunks, output_signature=(
      tf.TensorSpec([None, seq_length], tf.int32), tf.TensorSpec([None], tf.int64),
      tf.TensorSpec([None], tf.int64)))
  dataset = dataset.unbatch().map(mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  yield from dataset.batch(256).prefetch(2).as_numpy_iterator()


def _write_shard(task):
  """Worker: writes one shard to a temporary name, then renames it; returns its record count."""
  path, arrays_dir, sequence_index, copy_index, options = task
  input_ids = np.load(os.path.join(arrays_dir, 'input_ids.npy'), mmap_mode='r')
  segment_ids = np.load(os.path.join(arrays_dir, 'segment_ids.npy'), mmap_mode='r')
  lengths = np.load(os.path.join(arrays_dir, 'lengths.npy'), mmap_mode='r')
  positions = np.arange(options.seq_length)
  temporary = os.path.join(os.path.dirname(path), f'.{os.path.basename(path)}.incomplete')
  complete = False
  writer = tf.io.TFRecordWriter(temporary)
  try:
    if options.output_kind == 'masked':
      batches = _masked_batches(options, input_ids, sequence_index, copy_index)
    else:
      batches = ({'input_word_ids': input_ids[sequence_index[s:s + 256]]}
                 for s in range(0, len(sequence_index), 256))
    written = 0
    for batch in batches:
      for row, word_ids in enumerate(batch['input_word_ids']):
        sequence = sequence_index[written]
        features = {'input_ids': word_ids,
                    'input_mask': (positions < lengths[sequence]).astype(np.int64),
                    'segment_ids': segment_ids[sequence]}
        if options.output_kind == 'masked':
          for name in ('masked_lm_positions', 'masked_lm_ids', 'masked_lm_weights'):
            features[name] = batch[name][row]
        writer.write(record_format.serialize(features))
        written += 1
    writer.close()
    tf.io.gfile.rename(temporary, path, overwrite=True)
    complete = True
  finally:
    if not complete:
      writer.close()
      if tf.io.gfile.exists(temporary):
        tf.io.gfile.remove(temporary)
  return written


def _existing_outputs(output_dir: str, prefix: str) -> list[str]:
  return sorted(tf.io.gfile.glob(os.path.join(output_dir, f'{prefix}-*-of-*.tfrecord')) +
                tf.io.gfile.glob(os.path.join(output_dir, f'{prefix}-summary.json')))


def create_pretraining_data(source: corpus.CorpusSource, options: record_format.RecordOptions,
                            output_dir: str, output_prefix: str = 'pretrain', num_shards: int = 8,
                            num_workers: int = 1, overwrite: bool = False) -> dict:
  """Reads `source`, packs, optionally masks and writes sharded TFRecords plus a JSON summary.

  Args:
    source: the corpus (files, or TFDS read in this process).
    options: what the records contain.
    output_dir: created if missing; gets the shards and `<prefix>-summary.json`.
    output_prefix: the shards' name prefix.
    num_shards: number of output files (some may be empty when there are fewer records).
    num_workers: processes for packing files and writing shards; 1 runs everything in this process.
    overwrite: replace existing shards/summary of this prefix instead of refusing.

  Returns:
    The summary written to `<prefix>-summary.json` (counts, options, vocabulary hash, shards).

  Raises:
    ValueError: bad options or source, an unusable vocabulary, existing outputs without
      `overwrite`, or an input without a single token.
  """
  source.validate()
  # A new run re-reads the vocabulary: the file may have changed since a run in this process.
  _vocabulary.cache_clear()
  _packer.cache_clear()
  vocab = _vocabulary(options.vocab_file)
  options.validate(vocab)
  _packer(options)  # Checks the packing options here rather than in every worker.
  if num_shards < 1 or num_workers < 1:
    raise ValueError(f'num_shards={num_shards} and num_workers={num_workers} must be >= 1.')
  files = source.files()
  existing = _existing_outputs(output_dir, output_prefix)
  if existing and not overwrite:
    raise ValueError(f'{output_dir!r} already holds {len(existing)} output file(s) with prefix '
                     f'{output_prefix!r} (e.g. {os.path.basename(existing[0])}); delete them, '
                     'choose another output prefix, or pass --overwrite.')
  corpus_stats, packing_stats = corpus.CorpusStats(), sequence_packing.PackingStats()
  context = multiprocessing.get_context('spawn')
  pool = context.Pool(num_workers) if num_workers > 1 else None
  arrays_dir = tempfile.mkdtemp(prefix='create_pretraining_data-')
  try:
    parallel_map = pool.imap if pool else map
    sequences = _pack_all(source, files, options, parallel_map, corpus_stats, packing_stats)
    if not len(sequences):
      raise ValueError('no text to pack: every input was empty or skipped '
                       f'({corpus_stats.skipped()}).')
    # Only now that there is something to write: a failed run creates no directory and leaves
    # the outputs of an earlier run in place.
    tf.io.gfile.makedirs(output_dir)
    for path in existing:
      tf.io.gfile.remove(path)
    for name in ('input_ids', 'segment_ids', 'lengths'):
      np.save(os.path.join(arrays_dir, f'{name}.npy'), getattr(sequences, name))
    copies = options.dupe_factor if options.output_kind == 'masked' else 1
    # Record r of the shuffled order is copy r // N of sequence r % N.
    order = np.random.default_rng(options.seed).permutation(len(sequences) * copies)
    names = record_format.shard_names(output_prefix, num_shards)
    tasks = [(os.path.join(output_dir, name), arrays_dir, part % len(sequences),
              part // len(sequences), options)
             for name, part in zip(names, np.array_split(order, num_shards))]
    meter = progress.ProgressMeter()
    shard_records, done = [], 0
    for count in parallel_map(_write_shard, tasks):
      shard_records.append(count)
      done += count
      if meter.due() or len(shard_records) == num_shards:
        logging.info('shards %d/%d, records %s/%s (%s records/s), %s', len(shard_records),
                     num_shards, f'{done:,}', f'{len(order):,}', f'{meter.rate(done):,.0f}',
                     meter.timing(done / len(order)))
  finally:
    if pool:
      pool.terminate()  # Every result is in, or the run failed: stop the workers either way.
      pool.join()
    shutil.rmtree(arrays_dir, ignore_errors=True)
    # Shards of workers stopped mid-write (a worker's own failure removes its file itself).
    if tf.io.gfile.isdir(output_dir):
      for leftover in tf.io.gfile.glob(
          os.path.join(output_dir, f'.{output_prefix}-*.incomplete')):
        tf.io.gfile.remove(leftover)

  summary = _summary(source, files, options, vocab, corpus_stats, packing_stats, names,
                     shard_records)
  summary_path = os.path.join(output_dir, f'{output_prefix}-summary.json')
  atomic_files.write_json(summary_path, summary)
  logging.info('summary: %s', summary_path)
  return summary


def summary_text(summary: dict, output_dir: str, seconds: float) -> str:
  """What a finished run wrote and read, as lines for people (the tool's closing summary)."""
  counts = summary['counts']
  lines = [
      f'wrote {summary["records"]:,} {summary["output_kind"]} records in {len(summary["shards"])} '
      f'shards to {os.path.abspath(output_dir)} in {progress.format_duration(seconds)}',
      f'  input: {counts["files"]:,} files, {progress.format_bytes(counts["bytes"])}',
      f'  documents {counts["documents"]:,}, sentences {counts["sentences"]:,}, sequences '
      f'{counts["sequences"]:,} ({counts["two_segment_sequences"]:,} with two segments), padding '
      f'{counts["padding_fraction"]:.1%}',
      f'  tokens {counts["tokens"]:,}, [UNK] {counts["unk_tokens"]:,} ({counts["unk_rate"]:.4%})',
      f'  long sentences split: {counts["long_sentences_split"]:,} into '
      f'{counts["long_sentence_pieces"]:,} pieces (no token dropped)',
      '  skipped: ' + ', '.join(f'{k} {v:,}' for k, v in summary['skipped'].items()),
      '  repaired: ' + ', '.join(f'{k} {v:,}' for k, v in summary['repaired'].items()),
      '  features: ' + ', '.join(f'{k} {v}' for k, v in summary['features'].items()),
  ]
  return '\n'.join(lines)


def _pack_all(source, files, options, parallel_map, corpus_stats, packing_stats):
  """Packs every source in input order, logging progress and input problems."""
  meter = progress.ProgressMeter()
  if source.tfds_name:
    name = f'tfds:{source.tfds_name}/{source.tfds_split}'

    def documents():
      for document in source.read_documents(corpus_stats):
        yield document
        for message in corpus_stats.messages:
          logging.warning('%s', message)
        corpus_stats.messages.clear()
        if meter.due():
          logging.info('documents %s (%s docs/s), %s', f'{corpus_stats.documents:,}',
                       f'{meter.rate(corpus_stats.documents):,.0f}', meter.timing())

    sequences = _packer(options).pack(documents(), name, 0, packing_stats)
    for message in packing_stats.messages:
      logging.warning('%s', message)
    return sequences

  total_bytes = sum(tf.io.gfile.stat(path).length for path in files)
  tasks = [(index, path, source.document_mode, options) for index, path in enumerate(files)]
  parts = []
  for done, (sequences, file_corpus_stats, file_packing_stats) in enumerate(
      parallel_map(_pack_file, tasks), start=1):
    for message in file_corpus_stats.messages + file_packing_stats.messages:
      logging.warning('%s', message)
    corpus_stats.merge(file_corpus_stats)
    packing_stats.merge(file_packing_stats)
    parts.append(sequences)
    if meter.due() or done == len(files):
      logging.info('files %d/%d, %s, documents %s (%s docs/s), sequences %s, %s', done, len(files),
                   progress.format_bytes(corpus_stats.bytes), f'{corpus_stats.documents:,}',
                   f'{meter.rate(corpus_stats.documents):,.0f}', f'{packing_stats.sequences:,}',
                   meter.timing(corpus_stats.bytes / total_bytes if total_bytes else None))
  return sequence_packing.PackedSequences.concatenate(parts, options.seq_length)


def _summary(source, files, options, vocab, corpus_stats, packing_stats, names, shard_records):
  """The JSON summary: deterministic for a fixed input and options (no timings, no worker count)."""
  return {
      'output_kind': options.output_kind,
      'features': {name: f'{spec.dtype.name}[{spec.shape[0]}]'
                   for name, spec in record_format.feature_spec(options).items()},
      'records': sum(shard_records),
      'shards': [{'file': name, 'records': count} for name, count in zip(names, shard_records)],
      'options': dataclasses.asdict(options),
      'source': dataclasses.asdict(source) | {'num_files': len(files)},
      'vocab': {'path': vocab.path, 'size': vocab.size, 'sha256': file_hashes.sha256(vocab.path)},
      'counts': {
          'files': corpus_stats.files, 'bytes': corpus_stats.bytes,
          'documents': packing_stats.documents, 'sentences': packing_stats.sentences,
          'sequences': packing_stats.sequences,
          'two_segment_sequences': packing_stats.two_segment_sequences,
          'tokens': packing_stats.tokens, 'unk_tokens': packing_stats.unk_tokens,
          'unk_rate': packing_stats.unk_tokens / max(packing_stats.tokens, 1),
          'padding_fraction': packing_stats.padding_tokens / max(
              packing_stats.sequences * options.seq_length, 1),
          'long_sentences_split': packing_stats.long_sentences,
          'long_sentence_pieces': packing_stats.long_sentence_pieces,
      },
      'skipped': corpus_stats.skipped() | {
          'documents without tokens': packing_stats.empty_documents},
      'repaired': corpus_stats.repaired(),
  }
