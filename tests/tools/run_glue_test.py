"""tools/run_glue.py end to end on tiny GLUE fixtures; fine-tuning from TEAMS and COCO-LM."""

import functools
import importlib.util
import json
import os
import subprocess
import sys

from absl.testing import parameterized

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import exp_factory
from official.core import task_factory
from official.core import train_utils

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import experiments
from teams_tf.data import glue
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import teams_pretrainer
from tests import testing_utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_SEQ_LENGTH = 32
_POSITIVE = ('good', 'great', 'best', 'beautiful', 'popular', 'important')
_NEGATIVE = ('bad', 'poor', 'worst', 'small', 'difficult', 'lost')
_NOUNS = ('film', 'story', 'music', 'book', 'game', 'city')


def _write_tsv(path, lines):
  with open(path, 'w', encoding='utf-8') as f:
    f.write('\n'.join(lines) + '\n')


def _write_glue_fixtures(root, seed=0):
  """SST-2 and STS-B folders in GLUE's layouts, with labels that follow the words (learnable)."""
  rng = np.random.default_rng(seed)
  sst2, stsb = os.path.join(root, 'SST-2'), os.path.join(root, 'STS-B')
  os.makedirs(sst2)
  os.makedirs(stsb)
  for name, size in (('train.tsv', 48), ('dev.tsv', 16)):
    rows = ['sentence\tlabel']
    for i in range(size):
      label = i % 2
      words = rng.choice(_POSITIVE if label else _NEGATIVE, 2)
      rows.append(f'the {rng.choice(_NOUNS)} is {words[0]} and {words[1]} \t{label}')
    _write_tsv(os.path.join(sst2, name), rows)
    rows = ['index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t'
            'sentence2\tscore']
    for i in range(size):
      first, second = rng.choice(_NOUNS, 2)
      score = 5.0 if i % 3 == 0 else float(rng.integers(0, 40)) / 10
      if score == 5.0:
        second = first
      rows.append(f'{i}\tmain-captions\tMSRvid\t2012test\t{i:04d}\tnone\tnone\tthe {first} is '
                  f'good.\tthe {second} is good.\t{score:.3f}')
    _write_tsv(os.path.join(stsb, name), rows)
  return {'sst2': sst2, 'stsb': stsb}


def _demo_encoder_config():
  """The `*_demo` runs' encoder (pre-LN, no dropout), which glue_*_demo fine-tunes."""
  return experiments.low_budget_encoder_config('demo')


def _save_tiny_pretraining_checkpoint(directory, objective='teams'):
  """A TEAMS, COCO-LM or post-LN absolute-position TEAMS ('teams_post_ln') pretrainer, the
  first two with the glue_*_demo encoder (relative positions at the demo's scale), saved as
  Model Garden's trainer saves it (checkpoint_items beside `model`)."""
  relative_positions = dict(
      relative_position_bias=True, relative_position_num_buckets=32,
      relative_position_max_distance=128,
      relative_position_bias_scale=experiments.relative_position_bias_scale('demo'))
  if objective == 'teams':
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(
        encoder=_demo_encoder_config(), **relative_positions), seed=3)
  elif objective == 'coco_lm':
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(testing_utils.tiny_coco_lm_config(
        encoder=_demo_encoder_config(), **relative_positions), seed=3)
  else:
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=3)
  model(testing_utils.pretraining_batch())
  return tf.train.Checkpoint(model=model, **model.checkpoint_items).save(
      os.path.join(directory, 'ckpt'))


@functools.lru_cache(maxsize=None)
def _import_run_glue():
  """tools/run_glue.py as a module, loaded once (it defines absl flags)."""
  spec = importlib.util.spec_from_file_location(
      'run_glue', os.path.join(_ROOT, 'tools', 'run_glue.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


class RunGlueTest(tf.test.TestCase, parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = os.path.join(tf.compat.v1.test.get_temp_dir(), 'run_glue')
    glue_dirs = _write_glue_fixtures(os.path.join(cls.root, 'glue'))
    cls.data_dir = os.path.join(cls.root, 'records')
    vocab = glue.check_vocabulary('sample:vocab')
    for task, glue_dir in glue_dirs.items():
      glue.write_records(glue.tsv_processor(task), glue_dir, vocab, True, _SEQ_LENGTH,
                         os.path.join(cls.data_dir, task), task, glue_dir)
    cls.checkpoint = _save_tiny_pretraining_checkpoint(os.path.join(cls.root, 'pretrain'))
    cls.coco_lm_checkpoint = _save_tiny_pretraining_checkpoint(
        os.path.join(cls.root, 'coco_lm'), 'coco_lm')

  def _params(self, name='glue_sst2_demo', checkpoint=None):
    params = exp_factory.get_exp_config(name)
    params.override({'task': {
        'init_checkpoint': os.path.dirname(checkpoint or self.checkpoint),
        'train_data': {'input_path': os.path.join(self.data_dir, 'sst2', 'train.tfrecord'),
                       'seq_length': _SEQ_LENGTH, 'global_batch_size': 16},
        'validation_data': {'input_path': os.path.join(self.data_dir, 'sst2', 'dev.tfrecord'),
                            'seq_length': _SEQ_LENGTH, 'global_batch_size': 16},
    }})
    return params

  @parameterized.named_parameters(('teams', 'checkpoint'), ('coco_lm', 'coco_lm_checkpoint'))
  def test_init_checkpoint_restores_the_encoder_and_fine_tuning_lowers_the_loss(
      self, checkpoint_attribute):
    tf_keras.utils.set_random_seed(1)
    checkpoint = getattr(self, checkpoint_attribute)
    params = self._params('glue_sst2_demo', checkpoint)
    task = task_factory.get_task(params.task)
    model = task.build_model()
    batch = next(iter(task.build_inputs(params.task.train_data)))
    model(batch)
    reader = tf.train.load_checkpoint(checkpoint)
    encoder_keys = [key for key, _ in tf.train.list_variables(checkpoint)
                    if key.startswith('encoder/')]
    self.assertNotEmpty(encoder_keys)

    def saved_encoder():
      path = tf.train.Checkpoint(encoder=model.checkpoint_items['encoder']).write(
          os.path.join(self.get_temp_dir(), f'finetune_{len(os.listdir(self.get_temp_dir()))}'))
      return tf.train.load_checkpoint(path)

    before = saved_encoder()
    self.assertFalse(all(np.array_equal(before.get_tensor(key), reader.get_tensor(key))
                         for key in encoder_keys))
    task.initialize(model)
    after = saved_encoder()
    # Every variable of the fine-tuning encoder comes from the pretraining checkpoint's entry.
    self.assertLen(encoder_keys, len(model.checkpoint_items['encoder'].weights))
    for key in encoder_keys:
      self.assertAllEqual(reader.get_tensor(key), after.get_tensor(key), msg=key)

    def loss():
      return float(task.build_losses(batch, model(batch, training=False)))

    initial = loss()
    optimizer = tf_keras.optimizers.Adam(learning_rate=1e-3)
    for _ in range(8):
      task.train_step(batch, model, optimizer, metrics=[])
    self.assertLess(loss(), initial - 0.05)

  def test_relative_position_checkpoints_select_the_rel_pos_experiments(self):
    run_glue = _import_run_glue()
    post_ln = _save_tiny_pretraining_checkpoint(os.path.join(self.get_temp_dir(), 'post_ln'),
                                                'teams_post_ln')
    self.assertFalse(run_glue.check_init_checkpoint(os.path.dirname(post_ln)))
    self.assertTrue(run_glue.check_init_checkpoint(os.path.dirname(self.coco_lm_checkpoint)))
    # At a paper size that picks the `_rel_pos` twin, COCO-LM's encoder.
    name = run_glue.experiment_name('sst2', 'small', relative_positions=True)
    encoder = exp_factory.get_exp_config(name).task.model.encoder
    self.assertEqual(('glue_sst2_small_rel_pos', 'any', 32),
                     (name, encoder.type, encoder.any.relative_position_num_buckets))
    # The demo has one kind, relative positions at the demo recipe's scale.
    params, _, _ = run_glue.build_params(
        'sst2', 'demo', 1, self.data_dir, os.path.dirname(self.coco_lm_checkpoint),
        train_steps=2)
    self.assertEqual('any', params.task.model.encoder.type)
    self.assertEqual((32, 10.0), (params.task.model.encoder.any.relative_position_num_buckets,
                                  params.task.model.encoder.any.relative_position_bias_scale))

  def test_encoder_of_a_pre_ln_run_is_built_and_restored_whatever_the_size(self):
    # A teams_tf.train run (params.yaml beside the checkpoint) of a pre-LN, relative-position
    # TEAMS (the demo's scaled bias): fine-tuning builds that encoder, final LayerNorm and bias
    # scale included, with Table 6's dropout.
    run_dir = os.path.join(self.get_temp_dir(), 'pre_ln_run')
    encoder_config = _demo_encoder_config().replace(norm_first=True, dropout_rate=0.0,
                                                    attention_dropout_rate=0.0)
    model_config = testing_utils.tiny_teams_config(
        encoder=encoder_config, relative_position_bias=True, relative_position_bias_scale=10.0)
    model = teams_pretrainer.build_teams_pretrainer(model_config, seed=3)
    model(testing_utils.pretraining_batch())
    tf.train.Checkpoint(model=model, **model.checkpoint_items).save(os.path.join(run_dir, 'ckpt'))
    run_params = exp_factory.get_exp_config('teams_demo')
    run_params.task.model = model_config
    train_utils.serialize_config(run_params, run_dir)

    run_glue = _import_run_glue()
    encoder = run_glue.pretraining_encoder(run_dir)
    params, _, _ = run_glue.build_params('sst2', 'demo', 1, self.data_dir, run_dir,
                                         train_steps=2, encoder=encoder)
    built = params.task.model.encoder.any
    self.assertTrue(built.norm_first)
    self.assertEqual(32, built.relative_position_num_buckets)
    self.assertEqual(10.0, built.relative_position_bias_scale)  # The stored table reads x10.
    self.assertEqual(0.1, built.dropout_rate)
    task = task_factory.get_task(params.task)
    fine_tuning = task.build_model()
    fine_tuning(next(iter(task.build_inputs(params.task.train_data))))
    task.initialize(fine_tuning)
    restored = fine_tuning.checkpoint_items['encoder']
    self.assertTrue(any(layer.name == 'final_layer_norm' for layer in restored.layers))
    inputs = testing_utils.encoder_inputs(testing_utils.pretraining_batch())
    self.assertAllClose(model.discriminator_network(inputs)['sequence_output'],
                        restored(inputs)['sequence_output'], atol=1e-5)
    # Without a params.yaml the size's encoder stays.
    self.assertIsNone(run_glue.pretraining_encoder(os.path.dirname(self.checkpoint)))

  def _run_glue(self, output_dir, *extra):
    return subprocess.run(
        [sys.executable, 'tools/run_glue.py', '--tasks=sst2,stsb', '--seeds=2', '--size=demo',
         f'--data_dir={self.data_dir}', f'--init_checkpoint={os.path.dirname(self.checkpoint)}',
         f'--output_dir={output_dir}', '--train_steps=3',
         '--params_override=task.train_data.global_batch_size=8,'
         'task.validation_data.global_batch_size=8', *extra],
        cwd=_ROOT, capture_output=True, text=True, timeout=900, check=False)

  def test_two_tasks_two_seeds_tables_and_resume(self):
    output_dir = os.path.join(self.get_temp_dir(), 'glue_runs')
    first = self._run_glue(output_dir)
    self.assertEqual(0, first.returncode, first.stderr[-5000:])
    self.assertIn('=== run 4/4: stsb seed 2 ===', first.stderr)
    self.assertIn('ETA', first.stderr)

    results = {}
    for task in ('sst2', 'stsb'):
      for seed in (1, 2):
        run_dir = os.path.join(output_dir, task, f'seed_{seed}')
        self.assertTrue(tf.io.gfile.exists(os.path.join(run_dir, 'ckpt-3.index')))
        with open(os.path.join(run_dir, 'result.json')) as f:
          results[(task, seed)] = json.load(f)
        self.assertEqual(3, results[(task, seed)]['train_steps'])
        self.assertEqual(16, results[(task, seed)]['dev_examples'])
    # Our dev accuracy and Model Garden's own validation metric score the same model.
    for seed in (1, 2):
      ours, theirs = results[('sst2', seed)], results[('sst2', seed)]['model_garden_validation']
      self.assertAllClose(theirs['cls_accuracy'], ours['metrics']['accuracy'], atol=1e-6)
      ours, theirs = results[('stsb', seed)], results[('stsb', seed)]['model_garden_validation']
      self.assertAllClose(theirs['pearson_spearman_corr'],
                          ours['metrics']['pearson_spearman_corr'], atol=1e-4)

    with open(os.path.join(output_dir, 'results.json')) as f:
      summary = json.load(f)
    for task, metric in (('sst2', 'accuracy'), ('stsb', 'spearman'), ('stsb', 'pearson')):
      values = [results[(task, seed)]['metrics'][metric] for seed in (1, 2)]
      stats = summary['tasks'][task]['metrics'][metric]
      self.assertAllClose([np.median(values), np.mean(values), np.std(values, ddof=1),
                           min(values), max(values)],
                          [stats[k] for k in ('median', 'mean', 'std', 'min', 'max')])
    self.assertEqual('spearman', summary['tasks']['stsb']['headline_metric'])
    self.assertAllClose(
        (summary['tasks']['sst2']['metrics']['accuracy']['median'] +
         summary['tasks']['stsb']['metrics']['spearman']['median']) / 2,
        summary['glue_average']['median'])
    with open(os.path.join(output_dir, 'results.md')) as f:
      table = f.read()
    self.assertIn('| sst2 | **accuracy** | 2 |', table)
    self.assertIn('| stsb | **Spearman correlation** | 2 |', table)
    self.assertIn("Model Garden's STS-B metric: (Pearson + Spearman) / 2", table)
    self.assertIn('GLUE average over 2 task(s) (sst2, stsb)', table)
    self.assertIn(table.strip(), first.stdout)

    # A second invocation finds every result.json and trains nothing.
    result_files = [os.path.join(output_dir, task, f'seed_{seed}', 'result.json')
                    for task, seed in results]
    mtimes = [os.path.getmtime(path) for path in result_files]
    second = self._run_glue(output_dir)
    self.assertEqual(0, second.returncode, second.stderr[-5000:])
    self.assertIn('0 run(s) to do, 4 already done', second.stderr)
    self.assertIn('sst2 seed 1: skipped', second.stderr)
    self.assertNotIn('=== run', second.stderr)
    self.assertEqual(mtimes, [os.path.getmtime(path) for path in result_files])
    self.assertIn(table.strip(), second.stdout)

  def test_single_class_runs_are_flagged_in_the_table(self):
    run_glue = _import_run_glue()
    results = [dict(task='sst2', seed=seed, predicted_classes=classes,
                    metrics=dict(accuracy=accuracy))
               for seed, classes, accuracy in ((0, 2, 0.81), (1, 1, 0.509), (2, 2, 0.80))]
    summary = run_glue.summarize(results, ['sst2'])
    self.assertEqual([1], summary['tasks']['sst2']['single_class_seeds'])
    table = run_glue.markdown(summary, 'title')
    self.assertIn('1 run(s) predicted a single class', table)
    self.assertIn('sst2 seed 1', table)
    results[1]['predicted_classes'] = 2
    self.assertNotIn('single class', run_glue.markdown(run_glue.summarize(results, ['sst2']),
                                                       'title'))

  def test_bad_override_is_one_line_error(self):
    result = self._run_glue(os.path.join(self.get_temp_dir(), 'bad'),
                            '--params_override=trainer.train_steps=5')
    self.assertNotEqual(0, result.returncode)
    last_line = result.stderr.strip().splitlines()[-1]
    self.assertStartsWith(last_line, 'error: --params_override sets trainer.train_steps')


if __name__ == '__main__':
  tf.test.main()
