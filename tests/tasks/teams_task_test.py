"""Tests of the TEAMS pretraining Task on real (embedded) text with real masks."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import embedded
from teams_tf.data import tokenization
from teams_tf.losses import mws
from teams_tf.tasks import teams_task
from tests import testing_utils


def _task_config(**model_overrides):
  return testing_utils.sample_task_config(teams_task.TeamsPretrainTaskConfig,
                                          testing_utils.tiny_teams_config(**model_overrides))


class TeamsTaskTest(tf.test.TestCase, parameterized.TestCase):

  def test_registered_and_train_and_validation_steps_report_all_metrics(self):
    task = task_factory.get_task(_task_config())
    self.assertIsInstance(task, teams_task.TeamsPretrainTask)
    report = testing_utils.train_and_validation_step(task)
    self.assertGreater(float(tf.reduce_sum(report.batch['masked_lm_weights'])), 0)
    self.assertTrue(np.isfinite(report.train_loss))
    results = report.train_metrics
    self.assertEqual(
        {'mlm_loss', 'rtd_loss', 'mws_loss', 'mlm_accuracy', 'rtd_accuracy', 'rtd_auc',
         'mws_accuracy', 'replaced_fraction'}, set(results))
    # Real masks make every loss strictly positive (Model Garden's dummy data gives 0).
    for name in ('mlm_loss', 'rtd_loss', 'mws_loss'):
      self.assertGreater(results[name], 0.0, name)
    expected_total = (results['mlm_loss'] + 5.0 * results['rtd_loss'] +
                      2.0 * results['mws_loss'])
    self.assertAllClose(expected_total, report.train_loss, rtol=1e-5)
    self.assertTrue(np.isfinite(report.validation_loss))

  def test_loss_weights_are_applied(self):
    task = task_factory.get_task(_task_config(rtd_loss_weight=1.5, mws_loss_weight=0.25))
    model = task.build_model()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    outputs = model(batch)
    total = task.build_losses(batch, outputs)
    terms = teams_task.loss_terms(batch, outputs)
    self.assertAllClose(
        terms['mlm_loss'] + 1.5 * terms['rtd_loss'] + 0.25 * terms['mws_loss'], total)

  @parameterized.named_parameters(
      ('electra', dict(mws_loss_weight=0.0, rtd_loss_weight=50.0, rtd_head_type='ffn'),
       'rtd_loss', 50.0, {'mws_loss', 'mws_accuracy'}),
      ('mws_only', dict(rtd_loss_weight=0.0), 'mws_loss', 2.0,
       {'rtd_loss', 'rtd_accuracy', 'rtd_auc'}))
  def test_single_task_variants(self, overrides, kept_term, weight, absent):
    task = task_factory.get_task(_task_config(**overrides))
    model = task.build_model()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    outputs = model(batch, training=True)
    total = task.build_losses(batch, outputs)
    terms = teams_task.loss_terms(batch, outputs)
    self.assertEqual({'mlm_loss', kept_term}, set(terms))
    self.assertAllClose(terms['mlm_loss'] + weight * terms[kept_term], total)
    # A disabled task is neither computed nor logged (its head is not built; tests/configs checks
    # that every trained variable of each objective gets a gradient).
    names = {metric.name for metric in task.build_metrics()}
    self.assertEmpty(names & absent)
    self.assertIn(kept_term, names)

  def test_mws_selects_only_at_the_corrupted_positions(self):
    task = task_factory.get_task(_task_config(corruption_fraction=0.5))
    model = task.build_model()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    outputs = model(batch, training=True)
    corrupted_weights = outputs['corrupted_weights']
    self.assertLess(float(tf.reduce_sum(corrupted_weights)),
                    float(tf.reduce_sum(batch['masked_lm_weights'])))
    terms = teams_task.loss_terms(batch, outputs)
    self.assertAllClose(mws.mws_loss(outputs['mws_logits'], corrupted_weights),
                        terms['mws_loss'])

  def test_rtd_loss_on_text_tokens_leaves_out_cls_and_sep(self):
    task = task_factory.get_task(_task_config(rtd_loss_positions='text'))
    model = task.build_model()
    batch = next(iter(task.build_inputs(task.task_config.train_data)))
    outputs = model(batch, training=True)
    vocab = tokenization.load_vocabulary(
        embedded.resolve_path(task.task_config.train_data.vocab_file))
    ids, mask = batch['input_word_ids'].numpy(), batch['input_mask'].numpy()
    logits = outputs['rtd_logits'].numpy().astype(np.float64)
    labels = outputs['rtd_labels'].numpy()
    per_token = np.logaddexp(0, logits) - labels * logits  # -log sigmoid(+-logit)
    text = (mask > 0) & (ids != vocab.cls_id) & (ids != vocab.sep_id)
    self.assertLess(text.sum(), (mask > 0).sum())  # The batch has [CLS] and [SEP] to leave out.
    self.assertAllClose(per_token[text].mean(),
                        task.loss_terms(batch, outputs)['rtd_loss'], rtol=1e-5)
    # Eq. 4 as the papers write it averages over every non-padding token.
    self.assertAllClose(per_token[mask > 0].mean(),
                        teams_task.loss_terms(batch, outputs)['rtd_loss'], rtol=1e-5)
    # The metrics score the same positions: the untrained [CLS]/[SEP] outputs would rank anyhow.
    metrics = {metric.name: metric for metric in task.build_metrics(training=False)}
    task.update_task_metrics(metrics, batch, outputs)
    self.assertAllClose(((logits > 0) == (labels > 0))[text].mean(),
                        metrics['rtd_accuracy'].result(), rtol=1e-6)

  def test_unknown_rtd_loss_positions_is_reported(self):
    with self.assertRaisesRegex(ValueError, r"rtd_loss_positions='masked' must be 'all'"):
      task_factory.get_task(_task_config(rtd_loss_positions='masked')).build_model()

  def test_overfits_one_batch(self):
    first, last = testing_utils.overfit_losses(task_factory.get_task(_task_config()), 40)
    self.assertLess(last, 0.7 * first)

  def test_vocab_size_mismatch_is_reported_with_the_fix(self):
    config = _task_config()
    config.model.encoder.vocab_size = 123
    with self.assertRaisesRegex(ValueError, r'vocab_size=123 .* --params_override'):
      teams_task.TeamsPretrainTask(config)

  def test_sequence_longer_than_position_table_is_reported(self):
    config = _task_config()
    config.validation_data.seq_length = 64
    with self.assertRaisesRegex(
        ValueError, r'task.validation_data.seq_length=64 .*max_position_embeddings=32'):
      teams_task.TeamsPretrainTask(config)


if __name__ == '__main__':
  tf.test.main()
