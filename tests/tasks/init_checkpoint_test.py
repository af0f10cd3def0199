"""Continue pretraining: `task.init_checkpoint` restores the named modules or names the misfits."""

import os

import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf.configs import models
from teams_tf.tasks import init_checkpoint
from teams_tf.tasks import mlm_task
from teams_tf.tasks import teams_task
from tests import testing_utils


def _teams_task(init_from='', modules='encoder', **encoder_overrides):
  model = testing_utils.tiny_teams_config()
  for name, value in encoder_overrides.items():
    setattr(model.encoder, name, value)
  config = testing_utils.sample_task_config(teams_task.TeamsPretrainTaskConfig, model)
  config.init_checkpoint = init_from
  config.init_checkpoint_modules = modules
  return task_factory.get_task(config)


def _trained_checkpoint(task, model_dir):
  """A built model saved as Model Garden's trainer saves it; returns (model, run directory)."""
  model = task.build_model()
  model(next(iter(task.build_inputs(task.task_config.train_data))), training=False)
  for variable in model.trainable_variables:  # Distinct from any fresh initialisation.
    variable.assign(tf.random.stateless_normal(variable.shape, seed=[1, len(variable.name)]))
  checkpoint = tf.train.Checkpoint(model=model, global_step=tf.Variable(7, dtype=tf.int64),
                                   **model.checkpoint_items)
  tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=1).save(7)
  return model, model_dir


def _restored_count(source_variables, model_variables):
  """How many of `model_variables` hold the value of one of `source_variables`.

  Matched by value, not name: another objective's encoder names its variables differently.
  """
  source = [v.numpy() for v in source_variables]
  return sum(any(x.shape == v.shape and np.array_equal(x, v.numpy()) for x in source)
             for v in model_variables)


def _generator_only(model):
  """Variables of the generator and its MLM head that the discriminator does not share."""
  shared = {id(v) for v in model.discriminator_network.variables}
  return [v for v in model.generator_network.trainable_variables +
          model.masked_lm.trainable_variables if id(v) not in shared]


class InitCheckpointTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.source, self.run_dir = _trained_checkpoint(_teams_task(), self.get_temp_dir())

  def _started(self, modules, task=None):
    task = task or _teams_task(self.run_dir, modules)
    model = task.build_model()
    task.initialize(model)
    return model

  def _assert_restored(self, source_variables, model_variables, restored=True):
    self.assertNotEmpty(model_variables)
    self.assertEqual(len(model_variables) if restored else 0,
                     _restored_count(source_variables, model_variables))

  def test_encoder_restores_the_kept_encoder_only(self):
    model = self._started('encoder')
    self._assert_restored(self.source.checkpoint_items['encoder'].trainable_variables,
                          model.checkpoint_items['encoder'].trainable_variables)
    self._assert_restored(_generator_only(self.source), _generator_only(model), restored=False)

  def test_encoder_and_generator_restore_the_generator_and_its_head(self):
    model = self._started('encoder,generator')
    for part in ('generator_network', 'masked_lm'):
      self._assert_restored(getattr(self.source, part).trainable_variables,
                            getattr(model, part).trainable_variables)
    self._assert_restored(self.source.rtd_head.trainable_variables,
                          model.rtd_head.trainable_variables, restored=False)

  def test_all_restores_every_weight(self):
    model = self._started('all')
    self._assert_restored(self.source.trainable_variables, model.trainable_variables)

  def test_a_bert_checkpoint_starts_the_teams_encoder_but_not_the_whole_pretrainer(self):
    bert_config = testing_utils.sample_task_config(
        mlm_task.MlmPretrainTaskConfig,
        models.MlmConfig(encoder=testing_utils.tiny_encoder_config()))
    bert, bert_dir = _trained_checkpoint(task_factory.get_task(bert_config),
                                         os.path.join(self.get_temp_dir(), 'bert'))
    model = self._started('encoder', _teams_task(bert_dir, 'encoder'))
    # .variables: BERT's untrained pooler is not trainable there, but is restored all the same.
    self._assert_restored(bert.checkpoint_items['encoder'].variables,
                          model.checkpoint_items['encoder'].trainable_variables)
    with self.assertRaisesRegex(init_checkpoint.InitCheckpointError,
                                r"does not fit this model with task.init_checkpoint_modules='all': "
                                r'\d+ variables missing from the checkpoint \(model/'):
      self._started('all', _teams_task(bert_dir, 'all'))
    with self.assertRaisesRegex(init_checkpoint.InitCheckpointError, 'has no generator'):
      self._started('encoder,generator', task_factory.get_task(
          _with_init(bert_config, bert_dir, 'encoder,generator')))

  def test_other_widths_are_named_with_both_shapes(self):
    task = _teams_task(self.run_dir, 'encoder', intermediate_size=48)
    with self.assertRaises(init_checkpoint.InitCheckpointError) as raised:
      self._started('encoder', task)
    message = str(raised.exception)
    self.assertIn('with other shapes (encoder/', message)
    self.assertIn('model [32, 48] vs checkpoint [32, 64]', message)
    self.assertNotIn('missing', message)

  def test_no_checkpoint_there(self):
    task = _teams_task(os.path.join(self.get_temp_dir(), 'nothing'), 'encoder')
    with self.assertRaisesRegex(init_checkpoint.InitCheckpointError, 'names no checkpoint'):
      self._started('encoder', task)

  def test_unknown_modules_fail_when_the_task_is_built(self):
    with self.assertRaisesRegex(ValueError, "init_checkpoint_modules='encoders' is not one of"):
      _teams_task(self.run_dir, 'encoders')


def _with_init(config, init_from, modules):
  config.init_checkpoint = init_from
  config.init_checkpoint_modules = modules
  return config


if __name__ == '__main__':
  tf.test.main()
