"""Reads user text corpora into cleaned documents and sentences for the pretraining-data tools.

Input is either text files (UTF-8, one paragraph per line) or a TensorFlow Datasets text dataset. A
file holds documents in one of two `DOCUMENT_MODES`: 'blank_line' (blocks separated by blank lines:
the shared Wikipedia extract and the embedded sample, a title line then one paragraph per line) or
'file' (the whole file is one document); each TFDS example is one document.

Bad input is handled deliberately and counted in `CorpusStats`; every message names the file (or
TFDS example) and the 1-based line:
  - empty files (0 bytes or only blank lines) are skipped;
  - blank and whitespace-only lines separate documents ('blank_line') or are skipped;
  - invalid UTF-8 bytes are decoded as U+FFFD replacement characters and the line is kept (a word
    holding one becomes [UNK] unless the vocabulary has U+FFFD);
  - a file with a NUL byte, or with more than 10% of its non-blank lines invalid UTF-8, is taken to
    be binary and skipped;
  - C0/C1 control characters and DEL, except tab, are replaced by a space: tensorflow-text's BERT
    tokenizer already splits words at them, so the replacement keeps the tokenization of the
    dynamic path while removing the characters from the text.
Lines longer than a sequence are split when sequences are packed (`sequence_packing`).

The training loaders' text inputs get the file-level checks, by each file's head, through
`usable_text_files`. `split_sentences` is a rule-based sentence splitter; it only decides packing
boundaries.
"""

import dataclasses
import re
from typing import Iterator, Optional

from absl import logging
import tensorflow as tf

from teams_tf.data import embedded
from teams_tf.data import input_files

DOCUMENT_MODES = ('blank_line', 'file')

# A file whose non-blank lines are more than this fraction invalid UTF-8 is binary,
# not damaged text.
_MAX_INVALID_LINE_FRACTION = 0.1
# Per file and kind of problem, only the first few lines are named; the counters hold the totals.
_MESSAGES_PER_KIND = 3
# C0 and C1 control characters and DEL, except tab (newlines never reach a line).
_CONTROL_CHARS = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')


@dataclasses.dataclass
class CorpusStats:
  """Counters of what was read, repaired and skipped; `merge` adds another worker's counts.

  Attributes:
    files: files read as text (skipped files excluded).
    bytes: bytes of all files opened, skipped ones included.
    lines: lines of the files read and of the TFDS texts, blank ones included.
    documents: documents with at least one non-blank line.
    paragraphs: non-blank lines kept.
    blank_lines: empty lines.
    whitespace_lines: lines holding only whitespace, treated as blank.
    invalid_utf8_lines: kept lines whose invalid UTF-8 bytes became U+FFFD.
    control_char_lines: lines in which control characters were replaced by spaces.
    control_chars: control characters replaced.
    empty_files_skipped: files with no non-blank line.
    binary_files_skipped: files with a NUL byte or mostly invalid UTF-8.
    empty_documents_skipped: TFDS examples whose text has no non-blank line.
    messages: one line per problem (capped per file and kind), naming the file and line.
  """
  files: int = 0
  bytes: int = 0
  lines: int = 0
  documents: int = 0
  paragraphs: int = 0
  blank_lines: int = 0
  whitespace_lines: int = 0
  invalid_utf8_lines: int = 0
  control_char_lines: int = 0
  control_chars: int = 0
  empty_files_skipped: int = 0
  binary_files_skipped: int = 0
  empty_documents_skipped: int = 0
  messages: list[str] = dataclasses.field(default_factory=list)

  def merge(self, other: 'CorpusStats') -> None:
    """Adds `other`'s counters and appends its messages."""
    for field in dataclasses.fields(self):
      if field.name == 'messages':
        self.messages.extend(other.messages)
      else:
        setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

  def skipped(self) -> dict[str, int]:
    """Skipped inputs by reason."""
    return {'empty files': self.empty_files_skipped, 'binary files': self.binary_files_skipped,
            'empty TFDS documents': self.empty_documents_skipped}

  def repaired(self) -> dict[str, int]:
    """Kept lines that were changed or treated as blank, by reason."""
    return {'invalid UTF-8 lines (U+FFFD)': self.invalid_utf8_lines,
            'lines with control characters (replaced by spaces)': self.control_char_lines,
            'whitespace-only lines (treated as blank)': self.whitespace_lines}


@dataclasses.dataclass(frozen=True)
class Document:
  """One document: its non-blank lines (paragraphs) and where they came from.

  Attributes:
    source: the file path, or `tfds:<name>/<split> example <i>` (i from 0).
    line_numbers: the 1-based line of each paragraph within the source.
    paragraphs: the cleaned, non-blank lines.
  """
  source: str
  line_numbers: tuple[int, ...]
  paragraphs: tuple[str, ...]

  def location(self, paragraph_index: int) -> str:
    """`<source>, line <n>` of a paragraph, for messages."""
    return f'{self.source}, line {self.line_numbers[paragraph_index]}'


class _Notes:
  """Counts problems of one source by kind and keeps a message for the first few of each kind."""

  def __init__(self, stats: CorpusStats):
    self._stats = stats
    self._counts = {}

  def add(self, kind: str, message: str) -> None:
    self._counts[kind] = self._counts.get(kind, 0) + 1
    if self._counts[kind] <= _MESSAGES_PER_KIND:
      self._stats.messages.append(message)

  def close(self, source: str) -> None:
    for kind, count in self._counts.items():
      if count > _MESSAGES_PER_KIND:
        self._stats.messages.append(f'{source}: {count - _MESSAGES_PER_KIND} more {kind} lines')


def _clean_lines(text_lines: list[bytes], source: str, stats: CorpusStats,
                 notes: _Notes) -> Iterator[tuple[int, Optional[str]]]:
  """Yields (1-based line number, cleaned text or None for a blank line)."""
  for line_number, raw in enumerate(text_lines, start=1):
    stats.lines += 1
    try:
      text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
      text = raw.decode('utf-8', errors='replace')
      stats.invalid_utf8_lines += 1
      notes.add('invalid UTF-8', f'{source}, line {line_number}: invalid UTF-8 ({e.reason} at byte '
                f'{e.start}); the bad bytes were replaced by U+FFFD')
    text, num_controls = _CONTROL_CHARS.subn(' ', text)
    if num_controls:
      stats.control_char_lines += 1
      stats.control_chars += num_controls
      notes.add('control character', f'{source}, line {line_number}: {num_controls} control '
                'character(s) replaced by spaces')
    if not text:
      stats.blank_lines += 1
      yield line_number, None
    elif not text.strip():
      stats.whitespace_lines += 1
      yield line_number, None
    else:
      stats.paragraphs += 1
      yield line_number, text


def _is_utf8(data: bytes) -> bool:
  try:
    data.decode('utf-8')
  except UnicodeDecodeError:
    return False
  return True


def _binary_reason(path: str, data: bytes, lines: list[bytes]) -> Optional[str]:
  """Why the file looks binary (a message naming file and line), or None for text."""
  nul = data.find(b'\0')
  if nul >= 0:
    line_number = data.count(b'\n', 0, nul) + 1
    return f'{path}, line {line_number}: NUL byte; the file looks binary and is skipped'
  if _is_utf8(data):  # The common case, decided without looking at lines.
    return None
  text_lines = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
  invalid = [number for number, line in text_lines if not _is_utf8(line)]
  num_text_lines = len(text_lines)
  if len(invalid) > _MAX_INVALID_LINE_FRACTION * num_text_lines:
    return (f'{path}, line {invalid[0]}: {len(invalid)} of {num_text_lines} non-blank lines are '
            f'not valid UTF-8 (more than {_MAX_INVALID_LINE_FRACTION:.0%}); the file looks binary '
            'and is skipped')
  return None


def text_file_problem(path: str, prefix_bytes: int = 1 << 16) -> Optional[str]:
  """Why a training input file holds no usable text (a message naming it), or None.

  The training loaders read files as a stream, so only the first `prefix_bytes` are looked at
  (a corpus file is judged by its head): an empty file, a head of blank lines only in a file no
  longer than that, a NUL byte or mostly invalid UTF-8 in the head (as `read_file_documents`).
  """
  size = tf.io.gfile.stat(path).length
  if size == 0:
    return f'{path}: empty file (0 bytes)'
  with tf.io.gfile.GFile(path, 'rb') as f:
    head = f.read(prefix_bytes)
  lines = head.split(b'\n')
  if len(head) < size:  # The head may end inside a line (or a UTF-8 character).
    lines = lines[:-1] or lines
  if size <= prefix_bytes and not head.strip():
    return f'{path}: no non-blank line ({size} bytes)'
  return _binary_reason(path, head, lines)


def usable_text_files(files: list[str], input_path: str) -> list[str]:
  """`files` (of `input_path`) without those that hold no text, which are logged as skipped.

  Raises:
    ValueError: no file holds text; the message names the first problem and the fix.
  """
  problems = {path: text_file_problem(path) for path in files}
  skipped = [problem for problem in problems.values() if problem]
  usable = [path for path in files if not problems[path]]
  if skipped and usable:
    logging.warning('input_path %r: skipping %d of %d files that hold no text: %s%s', input_path,
                    len(skipped), len(files), '; '.join(skipped[:3]),
                    f'; and {len(skipped) - 3} more' if len(skipped) > 3 else '')
  if not usable:
    raise ValueError(
        f'input_path {input_path!r}: none of its {len(files)} file(s) holds text ({skipped[0]}'
        f'{f"; and {len(skipped) - 1} more" if len(skipped) > 1 else ""}); point it at UTF-8 '
        "text files, one paragraph per line, or records with input_format='tfrecord'.")
  return usable


def read_file_documents(path: str, document_mode: str, stats: CorpusStats) -> Iterator[Document]:
  """Reads one text file (whole, into memory) and yields its documents in file order.

  Args:
    path: a file path (local or any `tf.io.gfile` filesystem), or `sample:train` etc.
    document_mode: 'blank_line' or 'file' (see the module docstring).
    stats: updated in place: counters, plus messages for skipped files and repaired lines.

  Yields:
    Documents with at least one non-blank line.

  Raises:
    ValueError: an unknown `document_mode`.
  """
  if document_mode not in DOCUMENT_MODES:
    raise ValueError(f'document_mode={document_mode!r} is not one of {DOCUMENT_MODES}.')
  path = embedded.resolve_path(path)
  with tf.io.gfile.GFile(path, 'rb') as f:
    data = f.read()
  stats.bytes += len(data)
  lines = data.split(b'\n')
  if lines[-1] == b'':  # The final newline ends the last line; it does not start an empty one.
    lines.pop()
  lines = [line[:-1] if line.endswith(b'\r') else line for line in lines]
  reason = _binary_reason(path, data, lines)
  if reason:
    stats.binary_files_skipped += 1
    stats.messages.append(reason)
    return
  notes = _Notes(stats)
  documents_before = stats.documents
  numbers, paragraphs = [], []
  for line_number, text in _clean_lines(lines, path, stats, notes):
    if text is not None:
      numbers.append(line_number)
      paragraphs.append(text)
    elif document_mode == 'blank_line' and paragraphs:
      stats.documents += 1
      yield Document(path, tuple(numbers), tuple(paragraphs))
      numbers, paragraphs = [], []
  if paragraphs:
    stats.documents += 1
    yield Document(path, tuple(numbers), tuple(paragraphs))
  notes.close(path)
  if stats.documents > documents_before:
    stats.files += 1
  else:
    stats.empty_files_skipped += 1
    stats.messages.append(f'{path}: no non-blank line ({len(data)} bytes); empty file skipped')


def read_tfds_documents(name: str, split: str, stats: CorpusStats, text_key: str = 'text',
                        data_dir: Optional[str] = None) -> Iterator[Document]:
  """Yields one document per example of a TensorFlow Datasets text dataset, in dataset order.

  The text is split into lines and cleaned like a file's lines; examples without a non-blank line
  are skipped and counted.

  Args:
    name: the TFDS name, e.g. 'wikipedia/20230601.en'.
    split: the split, e.g. 'train' or 'train[:1%]'.
    stats: updated in place.
    text_key: the string feature holding the text.
    data_dir: the TFDS data directory (None: TFDS's default).

  Raises:
    ValueError: the dataset is unknown or has no string feature `text_key`.
  """
  # Imported here: tensorflow_datasets takes seconds to import and only TFDS input needs it.
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  try:
    dataset = tfds.load(name, split=split, data_dir=data_dir, shuffle_files=False)
  except tfds.core.registered.DatasetNotFoundError as e:
    raise ValueError(f'unknown TFDS dataset {name!r}: {" ".join(str(e).split())[:300]}') from e
  spec = dataset.element_spec
  if not isinstance(spec, dict) or text_key not in spec or spec[text_key].dtype != tf.string:
    keys = sorted(spec) if isinstance(spec, dict) else []
    raise ValueError(f'TFDS dataset {name!r} split {split!r} has no string feature {text_key!r}; '
                     f'its features are {keys}. Set the text key (--tfds_text_key) to one of them.')
  for index, text in enumerate(tfds.as_numpy(dataset.map(lambda example: example[text_key]))):
    source = f'tfds:{name}/{split} example {index}'
    stats.bytes += len(text)
    lines = [line[:-1] if line.endswith(b'\r') else line for line in text.split(b'\n')]
    notes = _Notes(stats)
    kept = [(n, t) for n, t in _clean_lines(lines, source, stats, notes) if t is not None]
    notes.close(source)
    if not kept:
      stats.empty_documents_skipped += 1
      continue
    stats.documents += 1
    yield Document(source, tuple(n for n, _ in kept), tuple(t for _, t in kept))


@dataclasses.dataclass(frozen=True)
class CorpusSource:
  """Where a corpus comes from: text files, or a TFDS dataset when `tfds_name` is set.

  Attributes:
    input_patterns: comma-separated files or globs (`sample:train` names the embedded corpus).
    document_mode: how files hold documents, one of `DOCUMENT_MODES`.
    tfds_name: a TensorFlow Datasets name; set exactly one of it and `input_patterns`.
    tfds_split: the TFDS split.
    tfds_text_key: the TFDS string feature holding the text.
    tfds_data_dir: the TFDS data directory ('' for TFDS's default).
  """
  input_patterns: str = ''
  document_mode: str = 'blank_line'
  tfds_name: str = ''
  tfds_split: str = 'train'
  tfds_text_key: str = 'text'
  tfds_data_dir: str = ''

  def validate(self) -> None:
    """Raises ValueError naming the field when the source is ambiguous or malformed."""
    if bool(self.input_patterns) == bool(self.tfds_name):
      raise ValueError('set exactly one of the input files (--input) and a TFDS dataset '
                       f'(--tfds_name); got input={self.input_patterns!r}, '
                       f'tfds_name={self.tfds_name!r}.')
    if self.document_mode not in DOCUMENT_MODES:
      raise ValueError(f'document_mode={self.document_mode!r} is not one of {DOCUMENT_MODES}.')

  def files(self) -> list[str]:
    """The input files in order (sorted within each pattern); [] for TFDS input.

    Raises:
      ValueError: a pattern matches no file.
    """
    if self.tfds_name:
      return []
    return input_files.list_input_files(self.input_patterns)

  def read_documents(self, stats: CorpusStats) -> Iterator[Document]:
    """All documents of the source, in order, read in this process."""
    if self.tfds_name:
      yield from read_tfds_documents(self.tfds_name, self.tfds_split, stats, self.tfds_text_key,
                                     self.tfds_data_dir or None)
    else:
      for path in self.files():
        yield from read_file_documents(path, self.document_mode, stats)


# Lowercased words that end in a period without ending a sentence ("Mr. Smith", "e.g. Paris").
_ABBREVIATIONS = frozenset([
    'mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'ft', 'vs', 'etc', 'e.g', 'i.e', 'cf',
    'ca', 'approx', 'no', 'nos', 'vol', 'fig', 'figs', 'pp', 'ed', 'eds', 'gen', 'col', 'lt', 'sgt',
    'capt', 'gov', 'sen', 'rep', 'rev', 'hon', 'inc', 'ltd', 'co', 'corp', 'bros', 'jan', 'feb',
    'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec', 'al'])
# A sentence end: terminators, optional closing quotes/brackets, whitespace, then a capital letter
# or digit, possibly after an opening quote/bracket.
_SENTENCE_END = re.compile('[.!?]+["\'\u201d\u2019)\\]]*\\s+(?=["\'\u201c\u2018(\\[]?[A-Z0-9])')
_DOTTED_ACRONYM = re.compile(r'(?:[A-Za-z]\.)+[A-Za-z]')  # "U.S", "e.g" (the final dot excluded)


def _ends_sentence(text: str, match: re.Match) -> bool:
  """False when the period of `match` ends an abbreviation, an initial or a dotted acronym."""
  if text[match.start()] != '.' or match.group().startswith('..'):
    return True
  words = text[:match.start()].split()
  if not words:
    return False
  word = words[-1].lstrip('(["\'\u201c\u2018')
  return not (word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())
              or _DOTTED_ACRONYM.fullmatch(word))


def split_sentences(paragraph: str) -> list[str]:
  """Splits a paragraph into sentences with a simple rule, for packing boundaries only.

  A sentence ends after '.', '!' or '?' (and any closing quotes or brackets) when whitespace and
  then an uppercase letter or a digit (optionally after an opening quote or bracket) follow, unless
  the period ends a known abbreviation ("Mr.", "e.g.", "No."), a single-letter initial ("J. Smith")
  or a dotted acronym ("U.S."). Splits happen only at whitespace, so the sentences tokenize to the
  same tokens as the paragraph.

  Args:
    paragraph: one non-blank line.

  Returns:
    The non-empty sentences in order, stripped of surrounding whitespace.
  """
  sentences = []
  start = 0
  for match in _SENTENCE_END.finditer(paragraph):
    if _ends_sentence(paragraph, match):
      sentences.append(paragraph[start:match.end()].strip())
      start = match.end()
  sentences.append(paragraph[start:].strip())
  return [s for s in sentences if s]
