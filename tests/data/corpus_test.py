"""Tests for teams_tf.data.corpus: document modes, bad-input handling, TFDS input, sentence
splitting."""

import os

from absl.testing import parameterized
import tensorflow as tf
import tensorflow_datasets as tfds

from teams_tf.data import corpus
from teams_tf.data import embedded


def _write(directory, name, content):
  path = os.path.join(directory, name)
  with open(path, 'wb') as f:
    f.write(content.encode('utf-8') if isinstance(content, str) else content)
  return path


def _read(path, mode='blank_line'):
  stats = corpus.CorpusStats()
  documents = list(corpus.read_file_documents(path, mode, stats))
  return documents, stats


def _mock_tfds(texts):
  """mock_data for any TFDS dataset whose examples are {'text': t} for t in `texts`."""

  def as_dataset(self, *args, **kwargs):
    del self, args, kwargs
    return tf.data.Dataset.from_tensor_slices({'text': list(texts)})

  return tfds.testing.mock_data(as_dataset_fn=as_dataset)


class ReadFileDocumentsTest(tf.test.TestCase, parameterized.TestCase):

  def test_blank_line_mode_splits_documents_and_keeps_line_numbers(self):
    path = _write(self.get_temp_dir(), 'a.txt', 'Title A\nPara one.\n\nTitle B\nPara two.\n')
    documents, stats = _read(path)
    self.assertEqual([d.paragraphs for d in documents],
                     [('Title A', 'Para one.'), ('Title B', 'Para two.')])
    self.assertEqual([d.line_numbers for d in documents], [(1, 2), (4, 5)])
    self.assertEqual(documents[1].location(1), f'{path}, line 5')
    self.assertEqual(
        (stats.files, stats.documents, stats.paragraphs, stats.blank_lines, stats.lines),
        (1, 2, 4, 1, 5))

  def test_file_mode_gives_one_document_per_file(self):
    path = _write(self.get_temp_dir(), 'a.txt', 'Title A\nPara one.\n\n\nTitle B\n')
    documents, stats = _read(path, mode='file')
    self.assertEqual([d.paragraphs for d in documents], [('Title A', 'Para one.', 'Title B')])
    self.assertEqual(stats.blank_lines, 2)

  def test_whitespace_only_lines_separate_documents_and_are_counted(self):
    path = _write(self.get_temp_dir(), 'a.txt', 'One.\n  \t \n\n Two.\n\u3000\n')
    documents, stats = _read(path)
    self.assertEqual([d.paragraphs for d in documents], [('One.',), (' Two.',)])
    self.assertEqual((stats.whitespace_lines, stats.blank_lines), (2, 1))

  def test_crlf_line_ends_are_not_content(self):
    path = _write(self.get_temp_dir(), 'a.txt', b'One.\r\n\r\nTwo.\r\n')
    documents, stats = _read(path)
    self.assertEqual([d.paragraphs for d in documents], [('One.',), ('Two.',)])
    self.assertEqual(stats.control_chars, 0)

  @parameterized.named_parameters(('empty', b''), ('blank_lines_only', b'\n \n\t\n'))
  def test_empty_file_is_skipped_and_counted(self, content):
    path = _write(self.get_temp_dir(), 'empty.txt', content)
    documents, stats = _read(path)
    self.assertEmpty(documents)
    self.assertEqual((stats.files, stats.empty_files_skipped), (0, 1))
    self.assertLen(stats.messages, 1)
    self.assertIn(path, stats.messages[0])
    self.assertIn('empty file skipped', stats.messages[0])

  def test_invalid_utf8_is_replaced_and_counted_with_file_and_line(self):
    lines = [b'Good line %d.' % i for i in range(20)]
    lines[4] = b'Bad \xff byte.'
    path = _write(self.get_temp_dir(), 'a.txt', b'\n'.join(lines) + b'\n')
    documents, stats = _read(path)
    self.assertEqual(documents[0].paragraphs[4], 'Bad \ufffd byte.')
    self.assertEqual(stats.invalid_utf8_lines, 1)
    self.assertEqual(stats.binary_files_skipped, 0)
    self.assertLen(stats.messages, 1)
    self.assertIn(f'{path}, line 5: invalid UTF-8', stats.messages[0])

  def test_messages_are_capped_per_file_and_kind_but_all_lines_counted(self):
    lines = [b'Good line.'] * 100
    for i in range(0, 50, 10):
      lines[i] = b'Bad \xfe.'
    path = _write(self.get_temp_dir(), 'a.txt', b'\n'.join(lines))
    _, stats = _read(path)
    self.assertEqual(stats.invalid_utf8_lines, 5)
    self.assertLen(stats.messages, 4)
    self.assertEqual(stats.messages[-1], f'{path}: 2 more invalid UTF-8 lines')

  @parameterized.named_parameters(
      ('nul_byte', b'Text.\nMore\x00text.\n', 'line 2: NUL byte'),
      ('mostly_invalid_utf8', b'ok\n\xff\xfe\n\x80abc\n',
       'line 2: 2 of 3 non-blank lines are not valid'))
  def test_binary_file_is_skipped_with_file_and_line(self, content, expected):
    path = _write(self.get_temp_dir(), 'blob.bin', content)
    documents, stats = _read(path)
    self.assertEmpty(documents)
    self.assertEqual((stats.files, stats.binary_files_skipped), (0, 1))
    self.assertEqual(stats.bytes, len(content))
    self.assertLen(stats.messages, 1)
    self.assertStartsWith(stats.messages[0], f'{path}, {expected}')
    self.assertEndsWith(stats.messages[0], 'the file looks binary and is skipped')

  def test_control_characters_become_spaces_and_are_counted(self):
    path = _write(self.get_temp_dir(), 'a.txt', 'A\x0bB\x1bC\x85D\x7fE\tF.\n\x0c\nNext.\n')
    documents, stats = _read(path)
    # The form-feed-only line becomes whitespace, so it separates documents like a blank line.
    self.assertEqual([d.paragraphs for d in documents], [('A B C D E\tF.',), ('Next.',)])
    self.assertEqual((stats.control_char_lines, stats.control_chars, stats.whitespace_lines),
                     (2, 5, 1))
    self.assertIn(f'{path}, line 1: 4 control character(s)', stats.messages[0])

  def test_unknown_document_mode(self):
    path = _write(self.get_temp_dir(), 'a.txt', 'x\n')
    with self.assertRaisesRegex(ValueError, "document_mode='lines' is not one of"):
      _read(path, mode='lines')

  def test_sample_corpus(self):
    documents, stats = _read('sample:train')
    self.assertLen(documents, 7)
    self.assertEqual(documents[0].paragraphs[0], 'Anarchism')
    self.assertEqual((stats.bytes, stats.lines, stats.invalid_utf8_lines, stats.control_chars),
                     (323424, 752, 0, 0))


class CorpusStatsTest(tf.test.TestCase):

  def test_merge_adds_counters_and_messages(self):
    a = corpus.CorpusStats(files=1, documents=2, messages=['a'])
    b = corpus.CorpusStats(files=3, empty_files_skipped=1, messages=['b'])
    a.merge(b)
    self.assertEqual((a.files, a.documents, a.empty_files_skipped, a.messages),
                     (4, 2, 1, ['a', 'b']))
    self.assertEqual(a.skipped()['empty files'], 1)


class CorpusSourceTest(tf.test.TestCase):

  def test_files_in_pattern_order(self):
    directory = self.get_temp_dir()
    for name in ('b.txt', 'a.txt', 'c.md'):
      _write(directory, name, 'x\n')
    source = corpus.CorpusSource(input_patterns=f'{directory}/c.md,{directory}/*.txt')
    self.assertEqual([os.path.basename(p) for p in source.files()], ['c.md', 'a.txt', 'b.txt'])

  def test_needs_exactly_one_input(self):
    for source in (corpus.CorpusSource(),
                   corpus.CorpusSource(input_patterns='x', tfds_name='lm1b')):
      with self.assertRaisesRegex(ValueError, 'set exactly one of the input files'):
        source.validate()

  def test_pattern_without_match(self):
    source = corpus.CorpusSource(input_patterns=os.path.join(self.get_temp_dir(), 'none*.txt'))
    with self.assertRaisesRegex(ValueError, 'matches no file'):
      source.files()

  def test_tfds_documents(self):
    texts = ['First doc.\nSecond line.', '  \n', 'Bad\x07bell.']
    source = corpus.CorpusSource(tfds_name='lm1b', tfds_split='train')
    stats = corpus.CorpusStats()
    with _mock_tfds(texts):
      documents = list(source.read_documents(stats))
    self.assertEqual([d.paragraphs for d in documents],
                     [('First doc.', 'Second line.'), ('Bad bell.',)])
    self.assertEqual(documents[1].location(0), 'tfds:lm1b/train example 2, line 1')
    self.assertEqual((stats.documents, stats.empty_documents_skipped, stats.control_chars),
                     (2, 1, 1))

  def test_tfds_missing_text_key(self):
    source = corpus.CorpusSource(tfds_name='lm1b', tfds_text_key='body')
    with _mock_tfds(['x']), self.assertRaisesRegex(
        ValueError, r"no string feature 'body'.*\['text'\]"):
      list(source.read_documents(corpus.CorpusStats()))


class SplitSentencesTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(
      ('simple', 'It rains. We stay! Why? Because.', ['It rains.', 'We stay!', 'Why?', 'Because.']),
      ('abbreviations', 'Mr. Smith met Dr. Jones, e.g. Paris. Then St. Louis.',
       ['Mr. Smith met Dr. Jones, e.g. Paris.', 'Then St. Louis.']),
      ('initials_and_acronyms', 'J. R. R. Tolkien left the U.S. In 1990 he wrote.',
       ['J. R. R. Tolkien left the U.S. In 1990 he wrote.']),
      ('lowercase_next', 'Values, i.e. the sum. it goes on.',
       ['Values, i.e. the sum. it goes on.']),
      ('quotes_and_digits', 'He said "Stop." "Now?" 3 men ran. (Later.) Done.',
       ['He said "Stop."', '"Now?"', '3 men ran.', '(Later.)', 'Done.']),
      ('decimal_number', 'It is 3.5 m long. Wide.', ['It is 3.5 m long.', 'Wide.']),
      ('no_terminator', 'Anarchism', ['Anarchism']))
  def test_split(self, paragraph, expected):
    self.assertEqual(corpus.split_sentences(paragraph), expected)

  def test_sentences_keep_every_non_space_character(self):
    documents, _ = _read('sample:valid')
    for paragraph in documents[0].paragraphs:
      self.assertEqual(''.join(corpus.split_sentences(paragraph)).replace(' ', ''),
                       paragraph.replace(' ', ''))



class TrainingInputFilesTest(tf.test.TestCase):
  """What the training loaders keep of a text input: files that hold text."""

  def setUp(self):
    super().setUp()
    self.dir = self.get_temp_dir()
    self.text = _write(self.dir, 'text.txt', 'A paragraph of words.\nAnother one.\n')

  def test_text_has_no_problem(self):
    self.assertIsNone(corpus.text_file_problem(self.text))
    self.assertIsNone(corpus.text_file_problem(embedded.resolve_path('sample:train')))

  def test_empty_and_blank_files(self):
    self.assertEqual(f'{self.dir}/empty.txt: empty file (0 bytes)',
                     corpus.text_file_problem(_write(self.dir, 'empty.txt', b'')))
    self.assertIn('no non-blank line (4 bytes)',
                  corpus.text_file_problem(_write(self.dir, 'blank.txt', ' \n\n\t')))

  def test_binary_files(self):
    self.assertIn('NUL byte; the file looks binary',
                  corpus.text_file_problem(_write(self.dir, 'model.bin', b'ab\ncd\x00ef')))
    garbage = b'\n'.join(bytes([0xff, 0xfe, 65 + i]) for i in range(20))
    self.assertIn('the file looks binary',
                  corpus.text_file_problem(_write(self.dir, 'latin.bin', garbage)))

  def test_a_long_file_is_judged_by_its_head(self):
    path = _write(self.dir, 'long.txt', 'word ' * 30_000 + '\x00')
    self.assertIsNone(corpus.text_file_problem(path, prefix_bytes=1 << 16))
    self.assertIn('NUL byte', corpus.text_file_problem(path, prefix_bytes=1 << 20))

  def test_usable_files_skip_the_rest_with_a_warning(self):
    empty = _write(self.dir, 'empty.txt', b'')
    with self.assertLogs(level='WARNING') as logs:
      usable = corpus.usable_text_files([empty, self.text], 'corpus/*.txt')
    self.assertEqual([self.text], usable)
    self.assertIn("input_path 'corpus/*.txt': skipping 1 of 2 files that hold no text: "
                  f'{empty}: empty file', logs.output[0])

  def test_no_usable_file_is_an_error_naming_the_problem(self):
    binary = _write(self.dir, 'model.bin', b'\x00\x01')
    with self.assertRaisesRegex(ValueError, r"input_path 'model.bin': none of its 1 file\(s\) "
                                r'holds text \(.*NUL byte.*\); point it at UTF-8 text files'):
      corpus.usable_text_files([binary], 'model.bin')


if __name__ == '__main__':
  tf.test.main()
