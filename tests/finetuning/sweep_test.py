"""teams_tf.finetuning.sweep on tiny GLUE fixtures; fine-tuning from TEAMS and COCO-LM."""

import dataclasses
import os

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tf_keras

from official.core import exp_factory
from official.core import task_factory
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.tasks import sentence_prediction

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.finetuning import finetune_config
from teams_tf.finetuning import sweep
from teams_tf.finetuning import sweep_report
from teams_tf.models import teams_pretrainer
from tests import testing_utils
from tests.finetuning import glue_testing_utils as fixtures


def _write_teams_run(run_dir, model_config):
  """Saves a TEAMS model in `run_dir` with the params.yaml of a teams_tf.train run; returns it."""
  model = teams_pretrainer.build_teams_pretrainer(model_config, seed=3)
  model(testing_utils.pretraining_batch())
  tf.train.Checkpoint(model=model, **model.checkpoint_items).save(os.path.join(run_dir, 'ckpt'))
  run_params = exp_factory.get_exp_config('teams_demo')
  run_params.task.model = model_config
  train_utils.serialize_config(run_params, run_dir)
  return model


class SweepTest(tf.test.TestCase, parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = os.path.join(tf.compat.v1.test.get_temp_dir(), 'sweep')
    cls.data_dir = fixtures.write_glue_records(cls.root)
    cls.checkpoint = fixtures.save_tiny_pretraining_checkpoint(os.path.join(cls.root, 'pretrain'))
    cls.coco_lm_checkpoint = fixtures.save_tiny_pretraining_checkpoint(
        os.path.join(cls.root, 'coco_lm'), 'coco_lm')

  def _params(self, name='glue_sst2_demo', checkpoint=None):
    params = exp_factory.get_exp_config(name)
    params.override({'task': {
        'init_checkpoint': os.path.dirname(checkpoint or self.checkpoint),
        'train_data': {'input_path': os.path.join(self.data_dir, 'sst2', 'train.tfrecord'),
                       'seq_length': fixtures.SEQ_LENGTH, 'global_batch_size': 16},
        'validation_data': {'input_path': os.path.join(self.data_dir, 'sst2', 'dev.tfrecord'),
                            'seq_length': fixtures.SEQ_LENGTH, 'global_batch_size': 16},
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
    post_ln = fixtures.save_tiny_pretraining_checkpoint(
        os.path.join(self.get_temp_dir(), 'post_ln'), 'teams_post_ln')
    self.assertFalse(finetune_config.check_init_checkpoint(os.path.dirname(post_ln)))
    self.assertTrue(finetune_config.check_init_checkpoint(os.path.dirname(self.coco_lm_checkpoint)))
    # At a paper size that picks the `_rel_pos` twin, COCO-LM's encoder.
    name = finetune_config.experiment_name('sst2', 'small', relative_positions=True)
    encoder = exp_factory.get_exp_config(name).task.model.encoder
    self.assertEqual(('glue_sst2_small_rel_pos', 'any', 32),
                     (name, encoder.type, encoder.any.relative_position_num_buckets))
    # The demo has one kind, relative positions at the demo recipe's scale.
    params, _, _ = finetune_config.build_params(
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
    encoder_config = fixtures.demo_encoder_config().replace(norm_first=True, dropout_rate=0.0,
                                                            attention_dropout_rate=0.0)
    model_config = testing_utils.tiny_teams_config(
        encoder=encoder_config, relative_position_bias=True, relative_position_bias_scale=10.0)
    model = _write_teams_run(run_dir, model_config)

    encoder = finetune_config.pretraining_encoder(run_dir)
    params, _, _ = finetune_config.build_params('sst2', 'demo', 1, self.data_dir, run_dir,
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
    self.assertIsNone(finetune_config.pretraining_encoder(os.path.dirname(self.checkpoint)))

  def test_encoder_from_gives_a_random_init_run_the_shape_of_a_pretraining_run(self):
    # A post-LN, absolute-position TEAMS run with the fixtures' vocabulary: its kept encoder
    # (bert_v2, 2 layers of 32) differs from glue_sst2_demo's own (pre-LN `any`), so the shape
    # visibly comes from the run.
    run_dir = os.path.join(self.get_temp_dir(), 'shape_run')
    model_config = testing_utils.tiny_teams_config(encoder=testing_utils.tiny_encoder_config(
        vocab_size=testing_utils.sample_vocab_size()))
    _write_teams_run(run_dir, model_config)
    settings = sweep.SweepSettings(
        tasks=('sst2',), seeds='1', size='demo', data_dir=self.data_dir, init_checkpoint='',
        output_dir=self.get_temp_dir(), train_steps=2)

    default = sweep.prepare(settings).configs[('sst2', 1)][0].task
    shaped = sweep.prepare(dataclasses.replace(settings, encoder_from=run_dir)).configs[
        ('sst2', 1)][0].task
    self.assertEqual('any', default.model.encoder.type)
    self.assertEqual('bert_v2', shaped.model.encoder.type)
    self.assertEqual((2, 32), (shaped.model.encoder.bert_v2.num_layers,
                               shaped.model.encoder.bert_v2.hidden_size))
    self.assertEqual(0.1, shaped.model.encoder.bert_v2.dropout_rate)  # Fine-tuning's, Table 6.
    self.assertEqual('', shaped.init_checkpoint)  # Random weights: nothing is restored.
    with self.assertRaisesRegex(ValueError, 'give only one of them'):
      sweep.prepare(dataclasses.replace(settings, encoder_from=run_dir, init_checkpoint=run_dir))
    with self.assertRaisesRegex(ValueError, 'has no params.yaml'):
      sweep.prepare(dataclasses.replace(settings,
                                        encoder_from=os.path.dirname(self.checkpoint)))

  def test_select_epoch_scores_dev_at_the_best_epoch_of_the_heldout_slice(self):
    data_dir = fixtures.write_glue_records(os.path.join(self.get_temp_dir(), 'slice'),
                                           heldout_examples=8)
    output_dir = os.path.join(self.get_temp_dir(), 'selected')
    fields = dict(tasks=('sst2',), seeds='1,', size='demo', data_dir=data_dir,
                  init_checkpoint=os.path.dirname(self.checkpoint), output_dir=output_dir,
                  epochs=3, select_epoch=True, params_override=(
                      'task.train_data.global_batch_size=8,'
                      'task.validation_data.global_batch_size=8'))
    sweep.run_fields(fields)
    result = sweep_report.read_json(os.path.join(output_dir, 'sst2', 'seed_1', 'result.json'))
    selection = result['selection']
    # 40 train examples, batch 8: an epoch is 5 steps; one validation of the slice each.
    self.assertEqual([5, 10, 15], [row['step'] for row in selection['epochs']])
    best = max(selection['epochs'], key=lambda row: (row['value'], -row['step']))
    self.assertEqual((best['step'], 8), (selection['step'], selection['heldout_examples']))
    # Dev (16 examples, never validated on) is scored with that epoch's weights.
    self.assertEqual(16, result['dev_examples'])
    run_dir = os.path.join(output_dir, 'sst2', 'seed_1')
    config = exp_factory.get_exp_config('glue_sst2_demo')
    config.override(hyperparams.read_yaml_to_params_dict(
        os.path.join(run_dir, 'params.yaml')).as_dict(), is_strict=False)
    mg_task = task_factory.get_task(config.task)
    model = mg_task.build_model()
    tf.train.Checkpoint(model=model).read(
        os.path.join(run_dir, f'ckpt-{selection["step"]}')).expect_partial()
    dev = config.task.validation_data.replace(
        input_path=os.path.join(data_dir, 'sst2', 'dev.tfrecord'), include_example_id=True)
    predictions = np.array([int(np.asarray(p).reshape(-1)[0])
                            for p in sentence_prediction.predict(mg_task, dev, model)])
    self.assertAllClose(np.mean(predictions == sweep.dev_labels(dev)),
                        result['metrics']['accuracy'])
    with self.assertRaisesRegex(ValueError, 'no held-out train slice'):
      sweep.prepare(sweep.SweepSettings(**dict(fields, data_dir=self.data_dir)))

  def test_best_epoch_ranks_nan_last_and_ties_to_the_earlier_epoch(self):
    run_dir = self.get_temp_dir()
    writer = tf.summary.create_file_writer(os.path.join(run_dir, 'validation'))
    with writer.as_default():
      for step, value in ((5, 0.4), (10, 0.7), (15, float('nan')), (20, 0.7)):
        tf.summary.scalar('matthews_corrcoef', value, step=step)
    writer.flush()
    step, rows = sweep.best_epoch(run_dir, 'matthews_corrcoef')
    self.assertEqual((10, 4), (step, len(rows)))
    with self.assertRaisesRegex(ValueError, 'logged no cls_accuracy'):
      sweep.best_epoch(run_dir, 'cls_accuracy')

  def test_run_fields_checks_every_setting_before_training(self):
    output_dir = os.path.join(self.get_temp_dir(), 'fields')
    with self.assertRaisesRegex(ValueError, r"Unknown --tasks \['sst3'\]"):
      sweep.run_fields(dict(tasks=('sst2', 'sst3'), seeds='1', size='demo',
                            data_dir=self.data_dir, init_checkpoint='', output_dir=output_dir,
                            train_steps=2))
    self.assertFalse(os.path.exists(output_dir))


if __name__ == '__main__':
  tf.test.main()
