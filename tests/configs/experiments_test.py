"""Every registered experiment builds and validates; every YAML mirror and gin file loads."""

import glob
import os

from absl.testing import parameterized
import gin
import tensorflow as tf
import yaml

from official.core import exp_factory
from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import experiments
from teams_tf.models import teams_pretrainer
from teams_tf.tasks import mlm_task
from tests import testing_utils

_ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
_YAMLS = sorted(glob.glob(os.path.join(_ROOT, 'experiments', '*', '*.yaml')))
_GIN_FILES = sorted(glob.glob(os.path.join(_ROOT, 'gin_configs', '*.gin')))


class ExperimentsTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters('teams', 'bert')
  def test_paper_sizes_follow_table5(self, objective):
    expected = {  # layers, hidden, embedding, heads, intermediate, lr, batch, steps.
        'small': (12, 256, 128, 4, 1024, 5e-4, 256, 500_000),
        'base': (12, 768, 768, 12, 3072, 2e-4, 256, 1_000_000),
        'large': (24, 1024, 1024, 16, 4096, 2e-4, 2048, 1_760_000),
    }
    for size, values in expected.items():
      name = f'{objective}_{size}'
      params = exp_factory.get_exp_config(name)
      params.validate()
      encoder = params.task.model.encoder
      optimizer = params.trainer.optimizer_config
      got = (encoder.num_layers, encoder.hidden_size, encoder.embedding_size,
             encoder.num_attention_heads, encoder.intermediate_size,
             optimizer.learning_rate.polynomial.initial_learning_rate,
             params.task.train_data.global_batch_size, params.trainer.train_steps)
      self.assertEqual(values, got, name)
      self.assertEqual(10_000, optimizer.warmup.linear.warmup_steps)
      self.assertEqual(1e-6, optimizer.optimizer.adamw.epsilon)
      self.assertEqual(0.01, optimizer.optimizer.adamw.weight_decay_rate)
      self.assertEqual((0.1, 0.1), (encoder.dropout_rate, encoder.attention_dropout_rate))
      self.assertEqual(512, params.task.train_data.seq_length)
      data = params.task.train_data
      self.assertEqual((0.15, 0.8, 0.1),
                       (data.mask_rate, data.mask_token_rate, data.random_token_rate))

  def test_teams_paper_knobs(self):
    for size in ('small', 'base', 'large'):
      model = exp_factory.get_exp_config(f'teams_{size}').task.model
      self.assertEqual((0.5, 5, 5.0, 2.0, 'sampled'),
                       (model.generator_depth_fraction, model.num_negatives,
                        model.rtd_loss_weight, model.mws_loss_weight, model.candidate_sampling))

  @parameterized.parameters('small', 'base', 'large', 'demo')
  def test_bert_is_mlm_only_and_otherwise_equals_teams(self, size):
    # Table 1 compares BERT and TEAMS at equal architecture, data and optimisation (§4.1).
    bert = exp_factory.get_exp_config(f'bert_{size}')
    self.assertIsInstance(bert.task, mlm_task.MlmPretrainTaskConfig)
    bert = bert.as_dict()
    teams = exp_factory.get_exp_config(f'teams_{size}').as_dict()
    bert_model, teams_model = bert['task'].pop('model'), teams['task'].pop('model')
    self.assertEqual({'encoder': teams_model['encoder']}, bert_model)
    self.assertEqual(teams, bert)

  def test_every_experiment_builds_its_task(self):
    for name in experiments.experiment_names():
      params = exp_factory.get_exp_config(name)
      params.validate()
      task = task_factory.get_task(params.task)
      if name.endswith('_demo'):
        task.build_model()  # The paper sizes are too large to build in a unit test.

  def test_yaml_mirrors_exist_and_equal_registered_configs(self):
    names = {os.path.basename(p)[:-len('.yaml')] for p in _YAMLS}
    self.assertSameElements(experiments.experiment_names(), names)
    for path in _YAMLS:
      name = os.path.basename(path)[:-len('.yaml')]
      registered = exp_factory.get_exp_config(name)
      with open(path) as f:
        loaded = exp_factory.get_exp_config(name)
        loaded.override(yaml.safe_load(f), is_strict=True)  # Unknown keys raise.
      self.assertEqual(registered.as_dict(), loaded.as_dict(),
                       f'{path} is stale: run python tools/write_experiment_yamls.py')
      self.assertEqual(experiments.yaml_path(name), os.path.relpath(
          path, os.path.join(_ROOT, 'experiments')))

  @parameterized.parameters(_GIN_FILES)
  def test_gin_file_parses_and_builds_a_model(self, path):
    gin.clear_config()
    try:
      gin.parse_config_file(path)
      model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config())
      model(testing_utils.pretraining_batch())
    finally:
      gin.clear_config()

  def test_head_epsilon_gin_file_reaches_the_layers(self):
    gin.clear_config()
    try:
      gin.parse_config_file(
          os.path.join(_ROOT, 'gin_configs', 'task_head_layer_norm_eps_1e-6.gin'))
      model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config())
      model(testing_utils.pretraining_batch())
    finally:
      gin.clear_config()
    self.assertEqual(1e-6, model.mws_head.layer_norm.epsilon)
    self.assertEqual(1e-6, model.rtd_head.get_config()['norm_epsilon'])


if __name__ == '__main__':
  tf.test.main()
