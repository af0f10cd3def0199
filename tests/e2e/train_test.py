"""End to end: the demo experiment through `python -m teams_tf.train`, continued pretraining,
errors (the command line's own output in a subprocess, each misuse through `train.main`)."""

import glob
import os
import platform
import subprocess
import sys
from unittest import mock

from absl import flags
import tensorflow as tf
import tf_keras

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import corpus
from teams_tf.preprocessing import pretraining_records
from teams_tf.preprocessing import record_format
from teams_tf.registry import experiments
from tests import testing_utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# The demo recipe at its T and predictions per sequence, with 2 of its 4 layers and batch 8.
_FAST = ','.join([
    'trainer.steps_per_loop=2', 'trainer.summary_interval=2', 'trainer.checkpoint_interval=2',
    'trainer.validation_steps=2', 'task.train_data.global_batch_size=8',
    'task.validation_data.global_batch_size=8', 'task.model.encoder.num_layers=2'
])


def _train(model_dir, *flags, env=None):
  return subprocess.run(
      [sys.executable, '-m', 'teams_tf.train', f'--model_dir={model_dir}', *flags],
      cwd=_ROOT, capture_output=True, text=True, timeout=600, check=False, env=env)


class TrainTest(tf.test.TestCase):

  def test_train_and_eval_writes_checkpoints_and_summaries_then_continues_pretraining(self):
    model_dir = os.path.join(self.get_temp_dir(), 'demo')
    gin_file = os.path.join(_ROOT, 'gin_configs', 'task_head_layer_norm_eps_1e-6.gin')
    # With the CPU kernels a user's run picks (the other tests' runs keep TensorFlow's own).
    first = _train(model_dir, '--experiment=teams_demo', '--mode=train_and_eval',
                   f'--gin_file={gin_file}',
                   f'--params_override={_FAST},trainer.train_steps=4,'
                   'trainer.validation_interval=4', env=testing_utils.default_kernels_environment())
    self.assertEqual(0, first.returncode, first.stderr[-3000:])
    self.assertTrue(tf.io.gfile.exists(os.path.join(model_dir, 'ckpt-4.index')))
    self.assertTrue(tf.io.gfile.exists(os.path.join(model_dir, 'params.yaml')))
    self.assertNotEmpty(glob.glob(os.path.join(model_dir, 'train', 'events.*')))
    self.assertNotEmpty(glob.glob(os.path.join(model_dir, 'validation', 'events.*')))
    with open(os.path.join(model_dir, 'operative_config.train_and_eval.gin')) as f:
      self.assertIn('AttentionRtdHead.norm_epsilon = 1e-06', f.read())
    self.assertIn('validation_loss', first.stdout)
    self.assertIn("Running train_and_eval of 'teams_demo' on 1 replica(s) (batch 8, T 64, 25 "
                  'predictions per sequence, float32, 4 steps)', first.stderr)
    # It ends with the closing summary, and without Model Garden's FLOP-profiler failure.
    self.assertIn(f"Done: train_and_eval of 'teams_demo' in {model_dir} (", first.stdout)
    self.assertRegex(first.stdout, r'train \| step:      4 of 4 \(100%\) \| elapsed [0-9:]+ \| '
                     r'ETA 0:00:00')
    self.assertRegex(first.stdout, r'rtd_auc +[0-9.]+  \(chance 0\.500; context-free [0-9.]+\)')
    self.assertNotIn('Failed to count model FLOPs', first.stderr)
    if platform.machine().lower() in ('x86_64', 'amd64'):
      self.assertIn("oneDNN CPU kernels: on (teams_tf's default on x86 CPUs", first.stderr)
    self.assertNotIn(' configs: {', first.stderr)  # Model Garden's per-layer config dumps.

    # Continue pretraining in a new run: its encoder starts from the first run's (Model Garden
    # calls Task.initialize because the new model_dir has no checkpoint).
    continued_dir = os.path.join(self.get_temp_dir(), 'continued')
    second = _train(continued_dir, '--experiment=teams_demo', '--mode=train',
                    f'--params_override={_FAST},trainer.train_steps=2,'
                    f'task.init_checkpoint={model_dir}')
    self.assertEqual(0, second.returncode, second.stderr[-3000:])
    self.assertIn(f"Started from encoder of {os.path.join(model_dir, 'ckpt-4')}", second.stderr)
    self.assertIn('train | step:      0 | training until step 2', second.stdout)
    self.assertTrue(tf.io.gfile.exists(os.path.join(continued_dir, 'ckpt-2.index')))


class _OneLineErrorTest(tf.test.TestCase):
  """Misuse ends in one line starting with 'error: ', a non-zero status and no traceback."""

  def _assert_one_line_error(self, message, expected):
    self.assertStartsWith(message, 'error: ')
    self.assertNotIn('\n', message)
    self.assertIn(expected, message)


class CommandLineTest(_OneLineErrorTest):
  """What the command prints, in its own process: help, the experiment list, an error line."""

  def test_unknown_experiment_is_the_last_line_of_stderr(self):
    result = _train(self.get_temp_dir(), '--experiment=teams_smal', '--mode=train')
    self.assertNotEqual(0, result.returncode)
    self.assertNotIn('Traceback', result.stderr)
    last_line = result.stderr.strip().splitlines()[-1]
    self._assert_one_line_error(
        last_line, "unknown experiment 'teams_smal'; did you mean 'teams_small'")
    self.assertIn('(--list_experiments lists all)', last_line)
    self.assertLess(len(last_line), 200)

  def test_list_experiments_describes_every_registered_experiment(self):
    result = subprocess.run([sys.executable, '-m', 'teams_tf.train', '--list_experiments'],
                            cwd=_ROOT, capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(0, result.returncode, result.stderr[-2000:])
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    self.assertEqual(experiments.experiment_names(include_research=False), sorted(lines))
    self.assertIn('Table 3 "Use FFN task heads"', lines['teams_small_ffn_heads'])
    self.assertIn('ELECTRA', lines['electra_small'])


class FlagErrorsTest(_OneLineErrorTest):
  """Flags: modes, strategies, determinism, gin, required flags (in this process)."""

  def _error(self, *argv):
    return testing_utils.train_error(f'--model_dir={self.get_temp_dir()}', *argv)

  def test_mode_model_garden_does_not_run(self):
    self._assert_one_line_error(
        self._error('--experiment=teams_demo', '--mode=continuous_train_and_eval'),
        'use one of train, eval, train_and_eval')

  def test_tpu_experiment_without_a_tpu(self):
    message = self._error('--experiment=teams_small', '--mode=train')
    self._assert_one_line_error(message, "cannot create the 'tpu' distribution strategy")
    self.assertIn('--tpu=', message)
    self.assertIn('runtime.distribution_strategy=mirrored', message)
    # teams_small had set mixed_bfloat16 before the refusal; the tests after this one in the same
    # pytest worker must still build float32 layers.
    self.assertEqual('float32', tf_keras.mixed_precision.global_policy().name)

  def test_bad_gin_binding(self):
    self._assert_one_line_error(
        self._error('--experiment=teams_demo', '--mode=train',
                    '--gin_params=teams_tf.NoSuchLayer.epsilon=1.0'), 'NoSuchLayer')

  def test_op_determinism_with_onednn_forced_on(self):
    with mock.patch.dict(os.environ, {'TF_ENABLE_ONEDNN_OPTS': '1'}):
      message = self._error('--experiment=teams_demo', '--mode=train', '--seed=1',
                            '--op_determinism')
    self._assert_one_line_error(message, 'TF_ENABLE_ONEDNN_OPTS=1: unset it or set it to 0')

  def test_missing_experiment_says_what_is_required(self):
    with self.assertRaisesRegex(flags.IllegalFlagValueError,
                                r'--experiment, --mode and --model_dir are required \(or pass '
                                r'--list_experiments\)'):
      testing_utils.train_error('--mode=train')


class ConfigAndInputErrorsTest(_OneLineErrorTest):
  """Overrides and training inputs, each refused before anything is written (in this process)."""

  def _error(self, model_dir, experiment, override):
    return testing_utils.train_error(f'--model_dir={model_dir}', f'--experiment={experiment}',
                                     '--mode=train', f'--params_override={override}')

  def test_unknown_override_key(self):
    self._assert_one_line_error(
        self._error(self.get_temp_dir(), 'teams_demo', 'task.model.num_negativs=3'),
        'num_negativs')

  def test_misspelt_override_key_gets_the_close_field_names(self):
    self._assert_one_line_error(
        self._error(self.get_temp_dir(), 'teams_demo', 'trainer.train_step=10'),
        'did you mean trainer.train_step -> trainer.train_steps')

  def test_a_step_count_below_one_is_refused_on_a_new_model_dir(self):
    model_dir = os.path.join(self.get_temp_dir(), 'negative')
    self._assert_one_line_error(self._error(model_dir, 'teams_demo', 'trainer.train_steps=-5'),
                                'trainer.train_steps=-5 must be a positive number of steps')
    self.assertFalse(os.path.exists(model_dir))

  def test_unparsable_override(self):
    self._assert_one_line_error(
        self._error(self.get_temp_dir(), 'teams_demo',
                    'task.train_data.input_path=/data/shard-[0-6].tfrecord'),
        'bad --config_file/--params_override')

  def test_a_word_for_a_number_is_refused_before_anything_is_written(self):
    model_dir = os.path.join(self.get_temp_dir(), 'abc')
    self._assert_one_line_error(self._error(model_dir, 'teams_demo', 'trainer.train_steps=abc'),
                                "trainer.train_steps='abc' must be an integer")
    self.assertFalse(os.path.exists(model_dir))

  def test_paper_knob_out_of_range(self):
    self._assert_one_line_error(
        self._error(self.get_temp_dir(), 'teams_demo', 'task.model.rtd_head_input_layer=9'),
        'rtd_head_input_layer=9 must be in [1, 4]')

  def test_model_dir_that_is_a_file(self):
    path = os.path.join(self.get_temp_dir(), 'notes.txt')
    with open(path, 'w') as f:
      f.write('my notes')
    self._assert_one_line_error(
        testing_utils.train_error(f'--model_dir={path}', '--experiment=teams_demo',
                                  '--mode=train'),
        'notes.txt is a file, not a directory')
    with open(path) as f:
      self.assertEqual('my notes', f.read())

  def test_an_unreachable_cloud_model_dir_is_one_line(self):
    unreachable = tf.errors.FailedPreconditionError(
        None, None, "Error executing an HTTP request: libcurl code 6 meaning 'Could not resolve "
        "hostname'\n\t when reading metadata of gs://bucket/teams_small")
    with mock.patch.object(tf.io.gfile, 'exists', side_effect=unreachable):
      self._assert_one_line_error(
          testing_utils.train_error('--model_dir=gs://bucket/teams_small',
                                    '--experiment=teams_demo', '--mode=train'),
          "--model_dir=gs://bucket/teams_small cannot be reached (Error executing an HTTP "
          "request: libcurl code 6 meaning 'Could not resolve hostname'): check the network")

  def test_several_input_files_in_one_override(self):
    self._assert_one_line_error(
        self._error(self.get_temp_dir(), 'bert_demo',
                    'task.train_data.input_path=/tmp/a.txt,/tmp/b.txt'),
        "quote a list of files, task.train_data.input_path='a.txt,b.txt'")

  def test_missing_input_file_is_one_line_and_writes_nothing(self):
    model_dir = os.path.join(self.get_temp_dir(), 'missing_input')
    missing = os.path.join(self.get_temp_dir(), 'no_such_corpus.txt')
    self._assert_one_line_error(
        self._error(model_dir, 'bert_demo', f"task.train_data.input_path='{missing},{missing}'"),
        f"input_path pattern '{missing}' matches no file")
    self.assertFalse(os.path.exists(model_dir))

  def test_binary_training_input_is_one_line_and_writes_nothing(self):
    model_dir = os.path.join(self.get_temp_dir(), 'binary_input')
    binary = os.path.join(self.get_temp_dir(), 'weights.bin')
    with open(binary, 'wb') as f:
      f.write(bytes(range(256)) * 64)
    self._assert_one_line_error(
        self._error(model_dir, 'bert_demo', f'task.train_data.input_path={binary}'),
        'none of its 1 file(s) holds text')
    self.assertFalse(os.path.exists(model_dir))

  def test_records_of_another_length_are_one_line_and_write_nothing(self):
    # The records tool's default T (128) against the demo's 64.
    records_dir = os.path.join(self.get_temp_dir(), 'records128')
    pretraining_records.create_pretraining_data(
        corpus.CorpusSource(input_patterns='sample:valid'),
        record_format.RecordOptions(vocab_file='sample:vocab', output_kind='unmasked'),
        records_dir, num_shards=1)
    model_dir = os.path.join(self.get_temp_dir(), 'records_run')
    self._assert_one_line_error(
        self._error(model_dir, 'teams_demo', 'task.train_data.input_format=tfrecord,'
                    f'task.train_data.input_path={records_dir}/pretrain-*'),
        'hold seq_length=128, but task.train_data.seq_length=64: set '
        'task.train_data.seq_length=128')
    self.assertFalse(os.path.exists(model_dir))

  def test_training_input_without_a_batch_is_one_line(self):
    model_dir = os.path.join(self.get_temp_dir(), 'no_records')
    records = os.path.join(self.get_temp_dir(), 'empty.tfrecord')
    with tf.io.TFRecordWriter(records):
      pass
    self._assert_one_line_error(
        self._error(model_dir, 'bert_demo', f'{_FAST},task.train_data.input_path={records},'
                    'task.train_data.input_format=tfrecord'),
        'the training input ran out of batches: ')


if __name__ == '__main__':
  tf.test.main()
