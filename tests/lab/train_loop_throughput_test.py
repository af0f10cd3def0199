"""End-to-end loop timing: `teams_tf.train` run on a config, loop rates read back; padded vocab."""

import os
import statistics

import tensorflow as tf

from teams_lab import train_loop_throughput
from teams_tf.data import embedded
from teams_tf.data import tokenization
from tests import testing_utils


class TrainLoopTest(tf.test.TestCase):

  def test_padded_vocabulary_tokenizes_like_the_sample_and_has_the_model_size(self):
    size = testing_utils.sample_vocab_size() + 50
    path = train_loop_throughput.write_padded_vocabulary(
        'sample:vocab', size, os.path.join(self.get_temp_dir(), 'vocab.txt'))
    self.assertEqual(size, train_loop_throughput.vocabulary_size(path))
    sample = tokenization.load_vocabulary(embedded.resolve_path('sample:vocab'))
    padded = tokenization.load_vocabulary(path)
    self.assertEqual(sample.tokens, padded.tokens[:sample.size])
    text = tf.constant(['The abolitionists saw slavery as a sin.'])
    self.assertAllEqual(tokenization.build_tokenizer(sample).tokenize(text).flat_values,
                        tokenization.build_tokenizer(padded).tokenize(text).flat_values)
    with self.assertRaisesRegex(ValueError, 'more than vocab_size 10'):
      train_loop_throughput.write_padded_vocabulary('sample:vocab', 10, path)

  def test_measure_reads_every_loop_of_a_real_run(self):
    params = testing_utils.two_layer_demo_experiment('bert')
    for data in (params.task.train_data, params.task.validation_data):
      data.seq_length, data.max_predictions_per_seq, data.global_batch_size = 32, 5, 4
    work_dir = self.get_temp_dir()
    measured = train_loop_throughput.measure(params, 'bert_demo', work_dir, loops=3,
                                             steps_per_loop=2)

    rates = measured['loop_steps_per_second']
    self.assertLen(rates, 3)
    self.assertTrue(all(rate > 0 for rate in rates))
    self.assertAllClose(2 / rates[0], measured['first_loop_seconds'])
    self.assertAllClose(statistics.median(rates[1:]), measured['steady_steps_per_second'])
    self.assertLen(measured['losses'], 3)
    self.assertTrue(measured['finite'])
    self.assertGreater(measured['peak_rss_mib'], 100)
    self.assertGreater(measured['wall_seconds'], measured['first_loop_seconds'])
    # Checkpoints only after the first loop (Orbit's first save) and the last: the steady loops
    # time training, not saving.
    self.assertCountEqual(
        [os.path.join(work_dir, 'run', f'ckpt-{step}.index') for step in (2, 6)],
        tf.io.gfile.glob(os.path.join(work_dir, 'run', 'ckpt-*.index')))

  def test_a_failed_run_names_the_command_and_its_error(self):
    params = testing_utils.two_layer_demo_experiment('bert')
    params.task.train_data.input_path = os.path.join(self.get_temp_dir(), 'missing-*.txt')
    with self.assertRaisesRegex(RuntimeError,
                                r'teams_tf.train .* exited with 1: error: .*missing-'):
      train_loop_throughput.measure(params, 'bert_demo', self.get_temp_dir(), loops=2,
                                    steps_per_loop=1)

  def test_one_loop_is_an_error(self):
    with self.assertRaisesRegex(ValueError, 'loops=1: need >= 2'):
      train_loop_throughput.measure(None, 'bert_demo', self.get_temp_dir(), loops=1,
                                    steps_per_loop=2)


if __name__ == '__main__':
  tf.test.main()
