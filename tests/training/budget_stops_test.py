"""Runs that stop at a compute budget, through `python -m teams_tf.train`.

A 2-layer `bert_demo` at T 32, batch 4, 2 steps per loop: a FLOP budget of k steps trains exactly
k steps and leaves the learning rate at 0; a tiny wall-clock budget stops a long run after its
first loop with a checkpoint and the final evaluation; a bad budget is a one-line error before
anything is written.
"""

import glob
import os
import subprocess
import sys

import tensorflow as tf

from official.core import exp_factory
from official.modeling import hyperparams
from official.modeling import optimization

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.training import checkpoints
from teams_tf.training import experiment_flops
from tests import testing_utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_SMALL = testing_utils.SMALL_DEMO_RUN + ',trainer.validation_steps=2'


def _train(model_dir, *flags):
  return subprocess.run(
      [sys.executable, '-m', 'teams_tf.train', '--experiment=bert_demo', f'--model_dir={model_dir}',
       *flags], cwd=_ROOT, capture_output=True, text=True, timeout=600, check=False)


def _checkpoint_steps(model_dir):
  return sorted(int(path[len(os.path.join(model_dir, 'ckpt-')):-len('.index')])
                for path in glob.glob(os.path.join(model_dir, 'ckpt-*.index')))


class BudgetStopsTest(tf.test.TestCase):

  def test_flop_budget_trains_k_steps_and_ends_the_schedule(self):
    k = 3  # Loops of 2 and 1 steps: the budget is not rounded to steps_per_loop.
    params = exp_factory.get_exp_config('bert_demo')
    hyperparams.override_params_dict(params, _SMALL, is_strict=True)
    flops_per_step = experiment_flops.step_flops(params)
    model_dir = os.path.join(self.get_temp_dir(), 'flops')
    config_file = os.path.join(self.get_temp_dir(), 'budget.yaml')
    with open(config_file, 'w') as f:
      f.write(f'trainer:\n  max_train_flops: {k * flops_per_step}\n  train_steps: 1000\n')
    run = _train(model_dir, '--mode=train', f'--config_file={config_file}',
                 f'--params_override={_SMALL},trainer.checkpoint_interval=2')
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    self.assertIn(f'= {k} steps of ', run.stderr)
    self.assertIn('training stops and the schedule ends there (trainer.train_steps 1,000 -> 3',
                  run.stderr)
    self.assertEqual([2, k], _checkpoint_steps(model_dir))
    latest = tf.train.latest_checkpoint(model_dir)
    self.assertEqual(k, checkpoints.global_step(latest))
    iterations = int(tf.train.load_checkpoint(latest).get_tensor(
        'optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE'))
    self.assertEqual(k, iterations)
    # The schedule the run used (params.yaml) gives 0 at the optimizer's iteration count.
    saved = hyperparams.read_yaml_to_params_dict(os.path.join(model_dir, 'params.yaml'))
    schedule = optimization.OptimizerFactory(optimization.OptimizationConfig(
        saved.trainer.optimizer_config.as_dict())).build_learning_rate()
    self.assertEqual(0.0, float(schedule(iterations)))
    self.assertGreater(float(schedule(iterations - 1)), 0.0)

  def test_wall_clock_budget_stops_after_a_loop_with_checkpoint_and_evaluation(self):
    model_dir = os.path.join(self.get_temp_dir(), 'minutes')
    run = _train(model_dir, '--mode=train_and_eval',
                 f'--params_override={_SMALL},trainer.train_steps=1000,'
                 'trainer.checkpoint_interval=1000,trainer.validation_interval=1000,'
                 'trainer.max_train_minutes=0.001')
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    # 0.06 s is spent in the first loop (its tracing alone takes longer): stop at step 2.
    self.assertIn('wall-clock budget of 0.001 min (trainer.max_train_minutes) reached at step 2 ',
                  run.stderr)
    self.assertIn('stopping: saving a checkpoint and running the final evaluation', run.stderr)
    self.assertIn('train | step:      2 | steps/sec', run.stdout)
    self.assertNotIn('train | step:      4', run.stdout)
    self.assertEqual([2], _checkpoint_steps(model_dir))
    events = glob.glob(os.path.join(model_dir, 'validation', 'events.*'))
    self.assertLen(events, 1)
    validation = {(value.tag, event.step) for event in tf.compat.v1.train.summary_iterator(
        events[0]) for value in event.summary.value}
    self.assertIn(('validation_loss', 2), validation)

  def test_negative_budget_is_a_one_line_error_before_anything_is_written(self):
    model_dir = os.path.join(self.get_temp_dir(), 'negative')
    message = testing_utils.train_error('--experiment=bert_demo', f'--model_dir={model_dir}',
                                        '--mode=train',
                                        '--params_override=trainer.max_train_minutes=-5')
    self.assertEqual('error: trainer.max_train_minutes=-5 must be a number > 0 (wall-clock '
                     'minutes of training); leave it unset (null) for no limit.', message)
    self.assertFalse(os.path.exists(model_dir))


if __name__ == '__main__':
  tf.test.main()
