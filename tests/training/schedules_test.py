"""Continuing a run with a larger `trainer.train_steps`, and runs that would change nothing.

The schedule rules on configs (`training.schedules`), then `python -m teams_tf.train` on a
2-layer `bert_demo` at T 32, batch 4: continuing a finished run trains (the weights change, at a
learning rate > 0), and a model_dir already at `train_steps`, or past a pinned decay, is a
one-line error that leaves params.yaml as it was.
"""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from official.core import exp_factory
from official.modeling import hyperparams
from official.modeling import optimization

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.training import schedules
from tests import testing_utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_SMALL = testing_utils.SMALL_DEMO_RUN + ',trainer.checkpoint_interval=2'
_DECAY = 'trainer.optimizer_config.learning_rate.polynomial.decay_steps'


def _demo(overrides):
  params = exp_factory.get_exp_config('bert_demo')
  hyperparams.override_params_dict(params, overrides, is_strict=True)
  return params


def _learning_rate(params, step):
  """The learning rate at `step` of an experiment config or of a run's params.yaml."""
  schedule = optimization.OptimizerFactory(optimization.OptimizationConfig(
      params.trainer.optimizer_config.as_dict())).build_learning_rate()
  return float(schedule(step))


class FollowTrainStepsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.registered = exp_factory.get_exp_config('bert_demo')
    self.default_steps = self.registered.trainer.train_steps

  def test_registered_schedules_end_at_train_steps(self):
    for name in ('bert_demo', 'teams_mini', 'teams_small', 'script_base', 'glue_sst2_mini'):
      params = exp_factory.get_exp_config(name)
      self.assertEqual(params.trainer.train_steps,
                       schedules.decay_end(params.trainer.optimizer_config), name)

  def test_larger_train_steps_moves_the_end_of_the_decay(self):
    steps = 2 * self.default_steps
    params = _demo(f'trainer.train_steps={steps}')
    schedules.follow_train_steps(params, self.registered)
    self.assertEqual(steps, schedules.decay_end(params.trainer.optimizer_config))
    # The step the registered run ended at now trains at half the peak learning rate.
    peak = params.trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate
    self.assertAllClose(peak / 2, _learning_rate(params, self.default_steps))
    self.assertEqual(0.0, _learning_rate(params, steps))

  def test_smaller_train_steps_ends_the_decay_earlier_and_keeps_the_warmup_fraction(self):
    warmup = self.registered.trainer.optimizer_config.warmup.linear.warmup_steps
    params = _demo(f'trainer.train_steps={self.default_steps // 100}')
    schedules.follow_train_steps(params, self.registered)
    self.assertEqual(self.default_steps // 100,
                     schedules.decay_end(params.trainer.optimizer_config))
    self.assertEqual(max(1, round(warmup / 100)),
                     params.trainer.optimizer_config.warmup.linear.warmup_steps)
    # A warmup longer than the run would ramp to the decayed (0) rate and train nothing.
    self.assertGreater(_learning_rate(params, 1), 0.0)

  def test_a_pinned_warmup_is_kept(self):
    params = _demo('trainer.train_steps=1600,trainer.optimizer_config.warmup.linear.warmup_steps=7')
    schedules.follow_train_steps(params, self.registered)
    self.assertEqual(7, params.trainer.optimizer_config.warmup.linear.warmup_steps)

  def test_a_pinned_schedule_is_kept(self):
    params = _demo(f'trainer.train_steps={2 * self.default_steps},{_DECAY}=500')
    schedules.follow_train_steps(params, self.registered)
    self.assertEqual(500, schedules.decay_end(params.trainer.optimizer_config))

  def test_unchanged_train_steps_changes_nothing(self):
    params = _demo('trainer.steps_per_loop=7')
    schedules.follow_train_steps(params, self.registered)
    self.assertEqual(self.registered.trainer.optimizer_config.as_dict(),
                     params.trainer.optimizer_config.as_dict())

  def test_a_constant_schedule_is_left_alone(self):
    params = _demo('trainer.train_steps=1600,trainer.optimizer_config.learning_rate.type=constant')
    schedules.follow_train_steps(params, self.registered)
    self.assertIsNone(schedules.decay_end(params.trainer.optimizer_config))


class CheckResumableTest(tf.test.TestCase):

  def test_fresh_and_unfinished_runs_pass(self):
    params = _demo('trainer.train_steps=800')
    schedules.check_resumable(params, 0)
    schedules.check_resumable(params, 799)

  def test_a_run_at_train_steps_has_nothing_to_do(self):
    params = _demo('trainer.train_steps=100')
    with self.assertRaisesRegex(ValueError, r'already at step 400 >= trainer.train_steps=100; '
                                r'nothing to do \(raise trainer.train_steps'):
      schedules.check_resumable(params, 400)

  def test_steps_after_a_decay_to_zero_are_refused(self):
    params = _demo(f'trainer.train_steps=900,{_DECAY}=800')
    with self.assertRaisesRegex(ValueError, r'step 800, where the learning-rate decay already '
                                r'ended .* steps 801-900 would train at learning rate 0'):
      schedules.check_resumable(params, 800)

  def test_steps_after_a_decay_to_a_positive_rate_train(self):
    params = _demo(f'trainer.train_steps=900,{_DECAY}=800,'
                   'trainer.optimizer_config.learning_rate.polynomial.end_learning_rate=1e-5')
    schedules.check_resumable(params, 800)


def _train(model_dir, overrides):
  return subprocess.run(
      [sys.executable, '-m', 'teams_tf.train', '--experiment=bert_demo', '--mode=train',
       f'--model_dir={model_dir}', f'--params_override={_SMALL},{overrides}'],
      cwd=_ROOT, capture_output=True, text=True, timeout=600, check=False)


def _train_error(model_dir, overrides):
  return testing_utils.train_error('--experiment=bert_demo', '--mode=train',
                                   f'--model_dir={model_dir}',
                                   f'--params_override={_SMALL},{overrides}')


def _weights(model_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
          if name.startswith('encoder/') and 'OPTIMIZER_SLOT' not in name}


class ContinueTrainingTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.model_dir = os.path.join(tf.compat.v1.test.get_temp_dir(), 'continued')
    cls.first = _train(cls.model_dir, 'trainer.train_steps=4')

  def setUp(self):
    super().setUp()
    self.assertEqual(0, self.first.returncode, self.first.stderr[-3000:])

  def _params_yaml(self):
    with open(os.path.join(self.model_dir, 'params.yaml')) as f:
      return f.read()

  def test_continuing_changes_the_weights_then_nothing_is_left_to_do(self):
    before = _weights(self.model_dir)
    run = _train(self.model_dir, 'trainer.train_steps=6')
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    self.assertIn('trainer.train_steps=6: the learning-rate schedule follows', run.stderr)
    after = _weights(self.model_dir)
    self.assertNotEmpty(before)
    changed = [name for name in before if not np.array_equal(before[name], after[name])]
    self.assertGreater(len(changed), len(before) // 2)
    # What the continued steps 5 and 6 trained at.
    saved = hyperparams.read_yaml_to_params_dict(os.path.join(self.model_dir, 'params.yaml'))
    self.assertGreater(_learning_rate(saved, 5), 0.0)

    yaml = self._params_yaml()
    self.assertEqual(
        'error: model_dir is already at step 6 >= trainer.train_steps=6; nothing to do (raise '
        'trainer.train_steps to train further).',
        _train_error(self.model_dir, 'trainer.train_steps=6'))
    self.assertEqual(yaml, self._params_yaml())

  def test_a_pinned_decay_that_has_ended_is_refused(self):
    yaml = self._params_yaml()
    self.assertIn('would train at learning rate 0',
                  _train_error(self.model_dir, f'trainer.train_steps=100,{_DECAY}=4'))
    self.assertEqual(yaml, self._params_yaml())


if __name__ == '__main__':
  tf.test.main()
