"""Tests of the COCO-LM pretraining Task on real (embedded) text, raw and as TFRecords."""

import os

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import corpus
from teams_tf.preprocessing import pretraining_records
from teams_tf.preprocessing import record_format
from teams_tf.tasks import coco_lm_task
from tests import testing_utils


def _task_config(**model_overrides):
  return testing_utils.sample_task_config(coco_lm_task.CocoLmPretrainTaskConfig,
                                          testing_utils.tiny_coco_lm_config(**model_overrides))


class CocoLmTaskTest(tf.test.TestCase, parameterized.TestCase):

  def test_train_and_validation_steps_report_every_term_and_metric(self):
    task = task_factory.get_task(_task_config())
    self.assertIsInstance(task, coco_lm_task.CocoLmPretrainTask)
    report = testing_utils.train_and_validation_step(task)
    results = report.train_metrics
    self.assertEqual(
        {'mlm_loss', 'copy_loss', 'lm_loss', 'scl_loss', 'replaced_fraction', 'copy_accuracy',
         'copy_auc', 'mlm_accuracy', 'lm_accuracy', 'lm_replaced_accuracy',
         'scl_positive_cosine', 'scl_negative_cosine'}, set(results))
    for name in ('mlm_loss', 'copy_loss', 'lm_loss', 'scl_loss'):
      self.assertGreater(results[name], 0.0, name)
    # Eq. (4) with Eq. (2)'s λ_copy = 50.
    expected_total = (results['mlm_loss'] + 50.0 * results['copy_loss'] + results['lm_loss'] +
                      results['scl_loss'])
    self.assertAllClose(expected_total, report.train_loss, rtol=1e-5)
    self.assertTrue(np.isfinite(report.validation_loss))

  @parameterized.named_parameters(
      ('rtd_only', dict(lm_loss_weight=0.0, scl_loss_weight=0.0), {'mlm_loss', 'copy_loss'}),
      ('clm_only', dict(scl_loss_weight=0.0), {'mlm_loss', 'copy_loss', 'lm_loss'}),
      ('scl_rtd', dict(lm_loss_weight=0.0), {'mlm_loss', 'copy_loss', 'scl_loss'}),
      ('random_replace', dict(replacement='random'), {'copy_loss', 'lm_loss', 'scl_loss'}),
      ('all_token_lm', dict(lm_positions='all', copy_loss_weight=0.0, clm_stop_gradient=False),
       {'mlm_loss', 'lm_loss', 'scl_loss'}))
  def test_ablations_compute_only_their_terms(self, overrides, expected_terms):
    task = task_factory.get_task(_task_config(**overrides))
    model = task.build_model()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    outputs = model(batch, training=True)
    terms = task.loss_terms(batch, outputs)
    self.assertEqual(expected_terms, set(terms))
    weights = task.loss_weights()
    self.assertAllClose(sum(weights[name] * value for name, value in terms.items()),
                        task.build_losses(batch, outputs))

  def test_all_token_lm_predicts_every_token(self):
    task = task_factory.get_task(_task_config(lm_positions='all', copy_loss_weight=0.0,
                                              clm_stop_gradient=False))
    model = task.build_model()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    outputs = model(batch, training=True)
    self.assertEqual(batch['input_word_ids'].shape + (testing_utils.sample_vocab_size(),),
                     outputs['clm_logits'].shape)
    self.assertAllEqual(tf.cast(batch['input_mask'], tf.float32), outputs['lm_weights'])

  def test_overfits_one_batch(self):
    first, last = testing_utils.overfit_losses(task_factory.get_task(_task_config()), 30)
    self.assertLess(last, 0.7 * first)

  def test_trains_on_records_from_the_data_tool(self):
    output_dir = os.path.join(self.get_temp_dir(), 'records')
    pretraining_records.create_pretraining_data(
        corpus.CorpusSource(input_patterns='sample:valid'),
        record_format.RecordOptions(vocab_file='sample:vocab', seq_length=32,
                                    output_kind='unmasked'),
        output_dir, num_shards=2)
    config = _task_config()
    for data in (config.train_data, config.validation_data):
      data.input_path = os.path.join(output_dir, 'pretrain-*.tfrecord')
      data.input_format = 'tfrecord'
    task = task_factory.get_task(config)
    model = task.build_model()
    optimizer = testing_utils.constant_lr_optimizer(1e-3)
    losses = [float(task.train_step(batch, model, optimizer)['loss'])
              for batch in task.build_inputs(config.train_data).take(2)]
    self.assertTrue(np.all(np.isfinite(losses)))

  def test_invalid_model_field_fails_when_the_model_is_built(self):
    # The builder is the config's one check; teams_tf.train builds before writing anything.
    task = coco_lm_task.CocoLmPretrainTask(_task_config(crop_fraction=1.5))
    with self.assertRaisesRegex(ValueError, 'crop_fraction=1.5 must be in'):
      task.build_model()


if __name__ == '__main__':
  tf.test.main()
