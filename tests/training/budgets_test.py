"""Compute budgets: fields from overrides and YAML, FLOP budgets as steps, checked values.

The runs that stop at a budget (`python -m teams_tf.train`) are in budget_stops_test.py.
"""

import os
import subprocess
import sys
import textwrap

from absl import logging as absl_logging
from absl.testing import parameterized
import tensorflow as tf

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import hyperparams
from official.modeling import optimization

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import trainer as trainer_configs
from teams_tf.training import budgets
from teams_tf.training import experiment_flops

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_WARMUP = 2


def _bert_demo(train_steps=400):
  """bert_demo at B 4, T 32, P 5, 2 warmup steps."""
  params = exp_factory.get_exp_config('bert_demo')
  hyperparams.override_params_dict(
      params, 'task.train_data.global_batch_size=4,task.train_data.seq_length=32,'
      'task.train_data.max_predictions_per_seq=5,'
      f'trainer.optimizer_config.warmup.linear.warmup_steps={_WARMUP},'
      f'trainer.train_steps={train_steps}', is_strict=True)
  return params


def _learning_rate(optimizer_config, step):
  schedule = optimization.OptimizerFactory(optimizer_config).build_learning_rate()
  return float(schedule(step))


class BudgetFieldsTest(tf.test.TestCase):

  def test_pretraining_experiments_have_unset_budgets(self):
    params = exp_factory.get_exp_config('teams_small')
    self.assertIsInstance(params.trainer, trainer_configs.PretrainTrainerConfig)
    self.assertEqual((None, None), (params.trainer.max_train_minutes,
                                    params.trainer.max_train_flops))

  def test_params_override(self):
    params = exp_factory.get_exp_config('teams_demo')
    hyperparams.override_params_dict(
        params, 'trainer.max_train_minutes=5,trainer.max_train_flops=1e15', is_strict=True)
    self.assertEqual((5, 1e15), (params.trainer.max_train_minutes,
                                 params.trainer.max_train_flops))

  def test_config_file(self):
    path = os.path.join(self.get_temp_dir(), 'budgets.yaml')
    with open(path, 'w') as f:
      # YAML reads 2.5e12 (no exponent sign) as a string; resolve turns it into a number.
      f.write('trainer:\n  max_train_minutes: 30\n  max_train_flops: 2.5e12\n')
    params = exp_factory.get_exp_config('teams_demo')
    hyperparams.override_params_dict(params, path, is_strict=True)
    budgets.resolve(params)
    self.assertEqual((30.0, 2.5e12), (params.trainer.max_train_minutes,
                                      params.trainer.max_train_flops))


class ResolveTest(tf.test.TestCase, parameterized.TestCase):

  def test_flop_budget_of_k_steps_ends_training_and_schedule_at_k(self):
    params = _bert_demo()
    flops_per_step = experiment_flops.step_flops(params)
    params.trainer.max_train_flops = 7 * flops_per_step
    with self.assertLogs(absl_logging.get_absl_logger(), level='INFO') as logs:
      budgets.resolve(params)
    self.assertIn('FLOP budget 1.35e9 = 7 steps of 1.92e8 FLOPs; training stops and the '
                  'schedule ends there', '\n'.join(logs.output))
    self.assertEqual(192_178_176, flops_per_step)  # Counted by hand in experiment_flops_test.
    optimizer_config = params.trainer.optimizer_config
    self.assertEqual((7, 7), (params.trainer.train_steps,
                              optimizer_config.learning_rate.polynomial.decay_steps))
    self.assertEqual(_WARMUP, optimizer_config.warmup.linear.warmup_steps)
    self.assertEqual(0.0, _learning_rate(optimizer_config, 7))
    self.assertGreater(_learning_rate(optimizer_config, 6), 0.0)
    # Warmup unchanged: the peak learning rate is reached at its end, then linear decay.
    self.assertAllClose(3e-3 * 5 / 7, _learning_rate(optimizer_config, _WARMUP))

  def test_budget_between_steps_rounds_down(self):
    params = _bert_demo()
    params.trainer.max_train_flops = 8 * experiment_flops.step_flops(params) - 1
    budgets.resolve(params)
    self.assertEqual(7, params.trainer.train_steps)

  def test_resolving_again_changes_nothing(self):
    params = _bert_demo()
    params.trainer.max_train_flops = 7 * experiment_flops.step_flops(params)
    budgets.resolve(params)
    resolved = params.as_dict()
    budgets.resolve(params)
    self.assertEqual(resolved, params.as_dict())

  def test_budget_beyond_train_steps_changes_nothing(self):
    params = _bert_demo(train_steps=5)
    params.trainer.max_train_flops = 6 * experiment_flops.step_flops(params)
    before = params.as_dict()
    with self.assertLogs(absl_logging.get_absl_logger(), level='INFO') as logs:
      budgets.resolve(params)
    self.assertIn('= 6 steps of 1.92e8 FLOPs, more than trainer.train_steps=5: the budget does '
                  'not shorten the run', '\n'.join(logs.output))
    self.assertEqual(before, params.as_dict())

  def test_no_budget_changes_nothing(self):
    params = _bert_demo()
    before = params.as_dict()
    budgets.resolve(params)
    self.assertEqual(before, params.as_dict())

  def test_model_garden_trainer_config_has_no_budgets(self):
    params = cfg.ExperimentConfig(trainer=cfg.TrainerConfig(train_steps=10))
    budgets.resolve(params)
    self.assertEqual(10, params.trainer.train_steps)

  @parameterized.named_parameters(
      ('negative_minutes', 'max_train_minutes', -5), ('zero_minutes', 'max_train_minutes', 0),
      ('nan_minutes', 'max_train_minutes', float('nan')),
      ('text_minutes', 'max_train_minutes', 'half an hour'),
      ('negative_flops', 'max_train_flops', -1e15), ('zero_flops', 'max_train_flops', 0))
  def test_bad_budget_names_the_field(self, field, value):
    params = _bert_demo()
    setattr(params.trainer, field, value)
    with self.assertRaisesRegex(ValueError, rf'^trainer\.{field}=.* must be a number > 0'):
      budgets.resolve(params)

  def test_flop_budget_below_one_step(self):
    params = _bert_demo()
    params.trainer.max_train_flops = 1e6
    with self.assertRaisesRegex(ValueError, r'trainer.max_train_flops=1e6 is less than one '
                                r'training step \(1.92e8 FLOPs'):
      budgets.resolve(params)

  def test_flop_budget_within_warmup(self):
    params = _bert_demo()
    params.trainer.max_train_flops = _WARMUP * experiment_flops.step_flops(params)
    with self.assertRaisesRegex(ValueError, 'allows 2 steps, no more than the 2 warmup steps'):
      budgets.resolve(params)

  def test_flop_budget_needs_a_decaying_schedule(self):
    params = _bert_demo()
    params.trainer.optimizer_config.learning_rate.type = 'constant'
    params.trainer.max_train_flops = 7 * experiment_flops.step_flops(params)
    with self.assertRaisesRegex(ValueError, "learning_rate.type in .*, not 'constant'"):
      budgets.resolve(params)

  def test_cosine_schedule_ends_at_the_budget(self):
    params = _bert_demo()
    hyperparams.override_params_dict(
        params, 'trainer.optimizer_config.learning_rate.type=cosine,'
        'trainer.optimizer_config.learning_rate.cosine.initial_learning_rate=0.001,'
        'trainer.optimizer_config.learning_rate.cosine.decay_steps=400', is_strict=True)
    params.trainer.max_train_flops = 7 * experiment_flops.step_flops(params)
    budgets.resolve(params)
    self.assertEqual(7, params.trainer.optimizer_config.learning_rate.cosine.decay_steps)
    self.assertAllClose(0.0, _learning_rate(params.trainer.optimizer_config, 7))


class AgreementTest(tf.test.TestCase):

  def test_single_replica_decides_alone(self):
    strategy = tf.distribute.get_strategy()
    on_any = budgets._on_any_replica(strategy)  # pylint: disable=protected-access
    self.assertEqual((True, False), (on_any(True), on_any(False)))

  def test_two_mirrored_replicas(self):
    # Two logical CPUs need a fresh process (devices are fixed once TensorFlow starts).
    script = textwrap.dedent('''
        import tensorflow as tf
        cpu = tf.config.list_physical_devices('CPU')[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from teams_tf.training import budgets
        strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
        on_any = budgets._on_any_replica(strategy)
        print('agreement', strategy.num_replicas_in_sync, on_any(True), on_any(False))
        ''')
    run = subprocess.run([sys.executable, '-c', script], cwd=_ROOT, capture_output=True,
                         text=True, timeout=300, check=False)
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    self.assertIn('agreement 2 True False', run.stdout)


if __name__ == '__main__':
  tf.test.main()
