"""Rows and Markdown of the vocabulary benchmark, on a hand-counted text and vocabulary."""

import os

import tensorflow as tf

from official.core import exp_factory

from teams_lab import vocab_report
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import tokenization


class VocabReportTest(tf.test.TestCase):

  def test_measure_counts_pieces_unknowns_and_embedding_share(self):
    vocab_file = os.path.join(self.get_temp_dir(), 'vocab.txt')
    with open(vocab_file, 'w') as f:
      f.write('\n'.join(tokenization.SPECIAL_TOKENS + ('the', 'cat', 'play', '##ed')) + '\n')
    # 'the' x3 and 'cat' x1: one piece each; 'played' x2: two pieces; 'dog' x2: one [UNK].
    word_counts = {'the': 3, 'cat': 1, 'played': 2, 'dog': 2}
    row = vocab_report.measure(vocab_file, word_counts, 8, 'bert_mini')
    self.assertEqual(os.path.abspath(vocab_file), row['vocab_file'])
    self.assertEqual(9, row['vocab_size'])
    self.assertAllClose(10 / 8, row['tokens_per_word'])
    self.assertAllClose(2 / 10, row['unk_rate'])
    seq_length = exp_factory.get_exp_config('bert_mini').task.train_data.seq_length
    self.assertAllClose((seq_length - 2) / (10 / 8), row['words_per_sequence'])
    encoder = exp_factory.get_exp_config('bert_mini').task.model.encoder
    width = encoder.embedding_size or encoder.hidden_size
    self.assertAllClose(9 * width / row['kept_encoder_parameters'], row['embedding_share'])
    self.assertGreater(row['step_flops'], 0)

  def test_markdown_has_one_table_row_per_vocabulary(self):
    row = dict(vocab_file='/v/vocab_8192.txt', vocab_size=7899, tokens_per_word=1.3412,
               unk_rate=0.00008, words_per_sequence=46.23, kept_encoder_parameters=1_830_000,
               embedding_share=0.551, step_flops=30.84e9)
    text = vocab_report.markdown('bert_mini', '/c/wiki_49.txt', 198_588, [row])
    self.assertStartsWith(text, '# Vocabulary size for `bert_mini`\n')
    self.assertIn('on wiki_49.txt (198,588 words,', text)
    self.assertIn(
        '| vocab_8192.txt | 7,899 | 1.341 | 0.008% | 46.2 | 1.83M | 55% | 30.8 |\n', text)


if __name__ == '__main__':
  tf.test.main()
