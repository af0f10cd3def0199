"""Every registered experiment builds and validates; every override file and gin file loads."""

import functools
import glob
import os

from absl.testing import parameterized
import gin
import numpy as np
import tensorflow as tf
import yaml

from official.core import exp_factory
from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.models import teams_pretrainer
from teams_tf.registry import experiments
from teams_tf.registry import recipes
from teams_tf.tasks import mlm_task
from tests import testing_utils

_ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
_OVERRIDE_FILES = sorted(os.path.relpath(path, _ROOT) for path in glob.glob(
    os.path.join(_ROOT, 'experiments', '*', '*.yaml')))
# The sizes each file of experiments/ is written for (its header names them).
_SIZES_OF_FILE = {
    'experiments/pretraining/mini_wiki_extract.yaml': ('mini',),
    'experiments/pretraining/wiki_books_tpu.yaml': ('small', 'base', 'large'),
}
# Every pretraining objective and ablation (registered at some size).
_OBJECTIVES_AND_VARIANTS = [
    ('teams', None), ('electra', None), ('electra', 'teams_reimpl'), ('bert', None),
    ('mws', None),
    ('teams', 'ffn_heads'),
    ('teams', 'top_task_layers'),
    ('teams', 'rtd_outputs'), ('teams', 'full_tie'), ('teams', 'no_tie'), ('teams', 'hardest'),
    ('coco_lm', None), ('script', None), ('taco', None), ('taco', 'concentrated'),
    ('taco', 'mlm_tp'), ('bert', 'taco_settings'),
] + [('coco_lm', variant) for variant in experiments.COCO_LM_ABLATIONS]


@functools.cache
def _registered(name):
  """`exp_factory.get_exp_config(name).as_dict()`, built once per test process: Model Garden's
  configs type-check every field they set, which makes all experiments take about 15 s."""
  return exp_factory.get_exp_config(name).as_dict()


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
      self.assertEqual(
          (None, 1.0, None, 5, 5.0, 2.0, 'sampled', 'attention', None, False, 'top'),
          (model.num_generator_layers, model.generator_width_fraction, model.num_shared_layers,
           model.num_negatives, model.rtd_loss_weight, model.mws_loss_weight,
           model.candidate_sampling, model.rtd_head_type, model.rtd_head_input_layer,
           model.mws_task_layer, model.exported_representation))
      layout = teams_pretrainer.resolve_layout(model)
      num_layers = model.encoder.num_layers
      # Table 5: generator depth 1/2; §3.2: bottom half of the generator shared; RTD on L - 1.
      self.assertEqual((num_layers // 2, num_layers // 4, num_layers - 1, num_layers),
                       (layout['num_generator_layers'], layout['num_shared_layers'],
                        layout['rtd_head_input_layer'], layout['kept_encoder_layers']))

  @parameterized.parameters('small', 'base', 'large', 'demo', 'mini')
  def test_bert_is_mlm_only_and_otherwise_equals_teams(self, size):
    # Table 1 compares BERT and TEAMS at equal architecture, data and optimisation (§4.1).
    bert = exp_factory.get_exp_config(f'bert_{size}')
    self.assertIsInstance(bert.task, mlm_task.MlmPretrainTaskConfig)
    bert = bert.as_dict()
    teams = exp_factory.get_exp_config(f'teams_{size}').as_dict()
    bert_model, teams_model = bert['task'].pop('model'), teams['task'].pop('model')
    # Every field BERT's model has (encoder, positions, output tie) is TEAMS'.
    self.assertEqual({name: teams_model[name] for name in bert_model}, bert_model)
    self.assertEqual(teams, bert)

  @parameterized.parameters('bert', 'electra', 'teams', 'mws', 'coco_lm', 'taco', 'script')
  def test_mini_is_one_recipe(self, objective):
    params = exp_factory.get_exp_config(f'{objective}_mini')
    train, validation = params.task.train_data, params.task.validation_data
    encoder = params.task.model.encoder
    recipe = (train.mask_rate, validation.mask_rate, train.seq_length, train.global_batch_size,
              train.max_predictions_per_seq, encoder.norm_first, encoder.dropout_rate,
              encoder.hidden_size, params.task.model.relative_position_bias)
    self.assertEqual((0.4, 0.15, 64, 64, 25, True, 0.0, 128, True), recipe)

  def test_mini_trains_on_real_text(self):
    # The recipe's values with TEAMS, whose model has every kind of layer; each objective's code
    # at the same recipe trains in test_objective_or_ablation_trains_one_step (demo size).
    params = exp_factory.get_exp_config('teams_mini')
    params.task.train_data.global_batch_size = params.task.validation_data.global_batch_size = 4
    report = testing_utils.train_and_validation_step(task_factory.get_task(params.task))
    self.assertTrue(np.isfinite(report.train_loss))
    self.assertTrue(np.isfinite(report.validation_loss))

  @parameterized.named_parameters(
      (f'{objective}_{variant}' if variant else objective, objective, variant)
      for objective, variant in _OBJECTIVES_AND_VARIANTS)
  def test_objective_or_ablation_trains_one_step(self, objective, variant):
    params = experiments.pretraining_experiment(objective, 'demo', variant)
    if variant in ('top_task_layers', 'rtd_outputs'):
      # Their kept stack is not the discriminator, so it is a plain BertEncoderV2, which the demo
      # recipe's pre-LN relative-position encoder is not (they are registered at small only).
      params.task.model.encoder.norm_first = False
      params.task.model.relative_position_bias = False
    params.task.train_data, params.task.validation_data = testing_utils.sample_data_configs()
    # What is checked here (every head reached by a loss, a finite step) does not depend on the
    # fused elementwise kernels (tests/layers/fused_layers_test.py), whose set-up would
    # triple the build time of each of these models.
    params.task.fuse_elementwise_ops = False
    task = task_factory.get_task(params.task)
    model = task.build_model()
    metrics = task.build_metrics()
    batch = next(iter(task.build_inputs(params.task.train_data)))
    # Every trained variable is reached by some loss: no head is left without a task.
    self.assertEqual([], testing_utils.unreached_variables(task, model, batch)[0])
    logs = task.train_step(
        batch, model, testing_utils.constant_lr_optimizer(1e-3), metrics=metrics)
    self.assertTrue(np.isfinite(float(logs['loss'])))

  def test_registered_pretraining_experiments_are_the_tested_configurations(self):
    tested = {(o, v) for o, v in _OBJECTIVES_AND_VARIANTS}
    for name in experiments.experiment_names(include_research=False):
      if experiments.is_pretraining(name):
        objective, size, variant = experiments.split_name(name)
        self.assertIn((objective, variant), tested, name)
        self.assertEqual(_registered(name),
                         experiments.pretraining_experiment(objective, size, variant).as_dict())
        self.assertTrue(experiments.describe(name), name)

  def test_paper_sizes_run_on_tpu_in_bfloat16_and_demos_on_this_machine(self):
    for name in experiments.experiment_names():
      if not experiments.is_pretraining(name):
        continue
      runtime = _registered(name)['runtime']
      placement = (runtime['distribution_strategy'], runtime['mixed_precision_dtype'])
      if experiments.split_name(name)[1] in recipes.LOW_BUDGET_SIZES:
        self.assertEqual(('mirrored', None), placement, name)
      else:
        self.assertEqual(('tpu', 'bfloat16'), placement, name)

  def test_electra_defaults(self):
    # ELECTRA (Clark et al., 2020): λ = 50, generator as deep as the discriminator with 1/4
    # (small, large) or 1/3 (base) of its width, only embeddings tied, FFN head on layer L.
    for size, width in (('small', 64), ('base', 256), ('large', 256)):
      model = exp_factory.get_exp_config(f'electra_{size}').task.model
      layout = teams_pretrainer.resolve_layout(model)
      self.assertEqual((50.0, 0.0, 'ffn', 0), (model.rtd_loss_weight, model.mws_loss_weight,
                                               model.rtd_head_type, layout['num_shared_layers']))
      self.assertEqual(model.encoder.num_layers, layout['num_generator_layers'])
      self.assertEqual(model.encoder.num_layers, layout['rtd_head_input_layer'])
      self.assertEqual(width, round(model.encoder.hidden_size * model.generator_width_fraction))
      reimpl = exp_factory.get_exp_config(f'electra_{size}_teams_reimpl').task.model
      self.assertEqual(model.encoder.num_layers // 2,
                       teams_pretrainer.resolve_layout(reimpl)['num_generator_layers'])
      self.assertEqual(1.0, reimpl.generator_width_fraction)

  def test_coco_lm_paper_knobs(self):
    # COCO-LM §3.3 and §4: auxiliary as wide as the main model, 4 layers for 12 (6 for 24),
    # dropout off when sampling, T5 relative positions (32 buckets up to 128 in the authors'
    # code), λ_copy 50 (authors' code), crop 90%, τ = 1.
    for size, auxiliary_layers in (('small', 4), ('base', 4), ('large', 6)):
      model = exp_factory.get_exp_config(f'coco_lm_{size}').task.model
      self.assertEqual(
          (auxiliary_layers, 1.0, True, 'auxiliary', True, 32, 128, 50.0, 1.0, 'masked', True,
           True, 1.0, 0.9, 1.0),
          (model.num_generator_layers, model.generator_width_fraction,
           model.sample_without_dropout, model.replacement, model.relative_position_bias,
           model.relative_position_num_buckets, model.relative_position_max_distance,
           model.copy_loss_weight, model.lm_loss_weight, model.lm_positions,
           model.copy_mechanism, model.clm_stop_gradient, model.scl_loss_weight,
           model.crop_fraction, model.scl_temperature))
    electra_aux = exp_factory.get_exp_config('coco_lm_base_electra_aux').task.model
    self.assertEqual((12, 256), (electra_aux.num_generator_layers, round(
        electra_aux.encoder.hidden_size * electra_aux.generator_width_fraction)))

  def test_script_follows_its_table_4(self):
    # SCRIPT Appendix Table 4 (steps from Table 2's caption), α = 50; small and base only.
    expected = {'small': (12, 256, 128, 5e-4, 128, 1_000_000, 128),
                'base': (12, 768, 768, 2e-4, 256, 766_000, 512)}
    for size, values in expected.items():
      params = exp_factory.get_exp_config(f'script_{size}')
      encoder = params.task.model.encoder
      optimizer = params.trainer.optimizer_config
      self.assertEqual(values, (
          encoder.num_layers, encoder.hidden_size, encoder.embedding_size,
          optimizer.learning_rate.polynomial.initial_learning_rate,
          params.task.train_data.global_batch_size, params.trainer.train_steps,
          params.task.train_data.seq_length))
      self.assertEqual((10_000, 1e-6, 0.01), (
          optimizer.warmup.linear.warmup_steps, optimizer.optimizer.adamw.epsilon,
          optimizer.optimizer.adamw.weight_decay_rate))
      self.assertEqual((50.0, False), (params.task.model.discriminator_loss_weight,
                                       params.task.model.straight_through))
    # At demo and mini α = 1 (measured: 50 holds the shared encoder on the frequency plateau),
    # stated in the description a user reads from --list_experiments.
    for size in ('demo', 'mini'):
      self.assertEqual(1.0, exp_factory.get_exp_config(
          f'script_{size}').task.model.discriminator_loss_weight)
      self.assertIn('at demo and mini 1', experiments.describe(f'script_{size}'))
    self.assertNotIn('script_large', experiments.experiment_names())
    with self.assertRaisesRegex(ValueError, "script has no size 'large'"):
      experiments.pretraining_experiment('script', 'large')

  def test_unknown_parts_and_a_variant_of_another_objective_are_errors(self):
    with self.assertRaisesRegex(ValueError, "Unknown objective 'tems'; use one of"):
      experiments.pretraining_experiment('tems', 'small')
    with self.assertRaisesRegex(ValueError, "Unknown variant 'full_ties'; use one of"):
      experiments.pretraining_experiment('teams', 'small', 'full_ties')
    with self.assertRaisesRegex(ValueError, "Variant 'full_tie' applies to 'teams', not 'bert'"):
      experiments.pretraining_experiment('bert', 'small', 'full_tie')

  def test_taco_follows_its_table_5_and_bert_runs_at_the_same_settings(self):
    # TACO Table 5 and §4: (layers, hidden, embedding, heads, FFN, lr, batch, steps, warm-up, T).
    expected = {'small': (4, 512, 512, 8, 2048, 1e-4, 1280, 250_000, 2_500, 256),
                'base': (12, 768, 768, 12, 3072, 1e-4, 1280, 500_000, 10_000, 256)}
    for size, values in expected.items():
      taco = exp_factory.get_exp_config(f'taco_{size}')
      encoder = taco.task.model.encoder
      optimizer = taco.trainer.optimizer_config
      self.assertEqual(values, (
          encoder.num_layers, encoder.hidden_size, encoder.embedding_size,
          encoder.num_attention_heads, encoder.intermediate_size,
          optimizer.learning_rate.polynomial.initial_learning_rate,
          taco.task.train_data.global_batch_size, taco.trainer.train_steps,
          optimizer.warmup.linear.warmup_steps, taco.task.train_data.seq_length))
      self.assertEqual(1e-8, optimizer.optimizer.adamw.epsilon)
      model = taco.task.model
      self.assertEqual((5, 50, 0.07, 1.0, 'all', 'masked'), (
          model.window_size, model.num_negatives, model.temperature, model.tc_loss_weight,
          model.tc_positions, model.mlm_positions))
      # The MLM baseline of TACO's comparison differs only in the model.
      bert = exp_factory.get_exp_config(f'bert_{size}_taco_settings').as_dict()
      taco = taco.as_dict()
      self.assertEqual(taco['task']['model']['encoder'], bert['task']['model']['encoder'])
      for part in (bert, taco):
        del part['task']['model']
      self.assertEqual(taco, bert)

  @parameterized.parameters('electra', 'mws', 'coco_lm')
  def test_baselines_are_compute_matched_with_teams(self, objective):
    # Same Table 5 encoder, data and optimisation; only model fields of the objective differ.
    for size in ('small', 'base', 'large'):
      baseline = exp_factory.get_exp_config(f'{objective}_{size}').as_dict()
      teams = exp_factory.get_exp_config(f'teams_{size}').as_dict()
      self.assertEqual(teams['task']['model']['encoder'],
                       baseline['task']['model']['encoder'])
      for part in (baseline, teams):
        del part['task']['model']
      self.assertEqual(teams, baseline)

  def test_every_experiment_builds_its_task(self):
    built = []
    for name in experiments.experiment_names():
      params = exp_factory.get_exp_config(name)
      params.validate()
      task = task_factory.get_task(params.task)
      # The paper sizes are too large to build in a unit test; the pretraining demos are built
      # and trained by test_objective_or_ablation_trains_one_step. Fine-tuning demos that share
      # a model config (the GLUE tasks of one label count, SQuAD v1 and v2) build once.
      model = params.task.model.as_dict()
      if name.endswith('_demo') and not experiments.is_pretraining(name) and model not in built:
        task.build_model()
        built.append(model)

  def test_override_files_load_onto_every_experiment_they_are_for(self):
    self.assertSameElements(_SIZES_OF_FILE, _OVERRIDE_FILES)
    for path, sizes in _SIZES_OF_FILE.items():
      with open(os.path.join(_ROOT, path)) as f:
        override = yaml.safe_load(f)
      names = [name for name in experiments.experiment_names(include_research=False)
               if experiments.is_pretraining(name) and experiments.split_name(name)[1] in sizes]
      self.assertNotEmpty(names, path)
      for name in names:
        params = exp_factory.get_exp_config(name)
        params.override(override, is_strict=True)  # A misspelt or moved field raises.
        params.validate()
        # Data only: the recipe stays the registered experiment's.
        self.assertEqual(_registered(name)['trainer'], params.as_dict()['trainer'], path)
        self.assertEqual({k: v for k, v in _registered(name)['task']['model'].items()
                          if k != 'encoder'},
                         {k: v for k, v in params.as_dict()['task']['model'].items()
                          if k != 'encoder'}, path)

  def test_mini_override_file_reads_the_shared_extract_from_the_clone(self):
    with open(os.path.join(_ROOT, 'experiments/pretraining/mini_wiki_extract.yaml')) as f:
      data = yaml.safe_load(f)['task']
    shared = os.path.join(_ROOT, '..', 'shared', 'data', 'corpus', 'enwiki_2015_extract')
    if not os.path.isdir(shared):
      self.skipTest(f'no {shared}')
    matched = {split: sorted(os.path.basename(p) for p in glob.glob(
        os.path.join(_ROOT, data[split]['input_path']))) for split in ('train_data',
                                                                        'validation_data')}
    self.assertEqual([f'wiki_0{i}.txt' for i in range(9)], matched['train_data'])
    self.assertEqual(['wiki_09.txt'], matched['validation_data'])

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
