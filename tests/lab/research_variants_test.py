"""The research variants (`teams_lab/research_variants.py`): registered over the library's
experiments, each its base experiment with a few model fields changed, each trains a step."""

import os
import subprocess
import sys

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.core import exp_factory
from official.core import task_factory

from teams_lab import research_variants
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.registry import experiments
from tests import testing_utils

_ROOT = os.path.join(os.path.dirname(__file__), '..', '..')


class ResearchVariantsTest(tf.test.TestCase, parameterized.TestCase):

  def test_variants_are_registered_as_research_beside_the_librarys_experiments(self):
    names = {f'{variant.objective}_mini_{name}'
             for name, variant in research_variants.VARIANTS.items()}
    self.assertLen(names, 9)
    self.assertLessEqual(names, set(experiments.experiment_names()))
    self.assertEqual(set(), names & set(experiments.experiment_names(include_research=False)))
    with self.assertRaisesRegex(ValueError, "Variant 'rtd10' is already registered"):
      experiments.register_variant('rtd10', research_variants.VARIANTS['rtd10'])

  def test_lab_train_lists_the_variants_and_the_library_train_does_not(self):
    result = subprocess.run([sys.executable, '-m', 'teams_lab.train', '--list_experiments'],
                            cwd=_ROOT, capture_output=True, text=True, timeout=300, check=True)
    self.assertIn('electra_mini_rtd10',
                  {line.split(None, 1)[0] for line in result.stdout.splitlines()})
    # What `teams_tf.train --list_experiments` prints (tests/e2e/train_test.py), in this process.
    self.assertNotIn('electra_mini_rtd10', experiments.experiment_names(include_research=False))

  # rtd10, rtd5 and no_mws_rtd50 change only a loss weight of a model that trains here already
  # (ELECTRA in experiments_test, no_mws here), as test_variant_differs_from_its_base_... checks.
  @parameterized.named_parameters(
      (name, variant.objective, name) for name, variant in research_variants.VARIANTS.items()
      if name not in ('rtd10', 'rtd5', 'no_mws_rtd50'))
  def test_variant_trains_one_step_with_every_head_reached(self, objective, variant):
    params = experiments.pretraining_experiment(objective, 'demo', variant)
    params.task.train_data, params.task.validation_data = testing_utils.sample_data_configs()
    params.task.fuse_elementwise_ops = False
    task = task_factory.get_task(params.task)
    model = task.build_model()
    batch = next(iter(task.build_inputs(params.task.train_data)))
    unreached, loss = testing_utils.unreached_variables(task, model, batch)
    self.assertEqual([], unreached)
    self.assertTrue(np.isfinite(float(loss)))

  def test_corrupt15_corrupts_as_many_tokens_as_15_percent_masking(self):
    params = exp_factory.get_exp_config('electra_mini_corrupt15')
    baseline = exp_factory.get_exp_config('electra_mini')
    self.assertAllClose(
        0.15, params.task.model.corruption_fraction * params.task.train_data.mask_rate)
    self.assertEqual(1.0, baseline.task.model.corruption_fraction)
    params.task.model.corruption_fraction = 1.0
    self.assertEqual(baseline.as_dict(), params.as_dict())

  @parameterized.parameters(
      ('electra_mini_text_rtd', 'electra_mini', dict(rtd_loss_positions=('text', 'all'))),
      ('electra_mini_rtd10', 'electra_mini', dict(rtd_loss_weight=(10.0, 50.0))),
      ('electra_mini_rtd5', 'electra_mini', dict(rtd_loss_weight=(5.0, 50.0))),
      ('electra_mini_rtd5_attention_head', 'electra_mini_rtd5',
       dict(rtd_head_type=('attention', 'ffn'), rtd_head_input_layer=(4, None))),
      ('electra_mini_rtd5_teams_generator', 'electra_mini_rtd5',
       dict(num_generator_layers=(None, 4), generator_width_fraction=(1.0, 0.5))),
      ('teams_mini_no_mws_rtd50', 'teams_mini_no_mws', dict(rtd_loss_weight=(50.0, 5.0))),
      ('teams_mini_no_mws_no_tie', 'teams_mini_no_mws', dict(num_shared_layers=(0, None))))
  def test_variant_differs_from_its_base_only_in_its_model_fields(self, variant, base, fields):
    params = exp_factory.get_exp_config(variant)
    for field, (value, base_value) in fields.items():
      self.assertEqual(value, getattr(params.task.model, field), field)
      setattr(params.task.model, field, base_value)
    self.assertEqual(exp_factory.get_exp_config(base).as_dict(), params.as_dict())

  def test_no_mws_differs_from_teams_mini_in_the_mws_weight_and_the_rtd_head_layer(self):
    params = exp_factory.get_exp_config('teams_mini_no_mws')
    model = params.task.model
    self.assertEqual((0.0, 5.0, 'attention', 4), (model.mws_loss_weight, model.rtd_loss_weight,
                                                  model.rtd_head_type, model.rtd_head_input_layer))
    model.mws_loss_weight, model.rtd_head_input_layer = 2.0, None
    self.assertEqual(exp_factory.get_exp_config('teams_mini').as_dict(), params.as_dict())


if __name__ == '__main__':
  tf.test.main()
