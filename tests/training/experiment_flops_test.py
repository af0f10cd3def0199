"""FLOPs of a training step read from an experiment config, against hand-enumerated matmuls.

The expected values list every matrix product of the step with its [m, k] x [k, n] shape, as
read off the model (not the counter's formula), and count 2mkn forward, 3 x that with backward.
"""

from absl.testing import parameterized
import tensorflow as tf

from official.core import exp_factory
from official.modeling import hyperparams

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.registry import experiments
from teams_tf.training import experiment_flops
from tests import testing_utils

_B, _T, _P = 4, 32, 5
# The demo encoder (configs/encoders.py 'tiny' with an unfactorised embedding): L, H, E, I.
_L, _H, _E, _I = 4, 64, 64, 256


def _demo(name):
  params = exp_factory.get_exp_config(name)
  hyperparams.override_params_dict(
      params, f'task.train_data.global_batch_size={_B},task.train_data.seq_length={_T},'
      f'task.train_data.max_predictions_per_seq={_P}', is_strict=True)
  return params


def _trained(*products):
  """3 x (forward 2mkn) summed over (m, k, n, count) products."""
  return 3 * sum(2 * m * k * n * count for m, k, n, count in products)


def _layer(width=_H, ffn=_I):
  """One transformer layer's products: Q, K, V, output; FFN in and out; QKᵀ and AV per row."""
  tokens = _B * _T
  return [(tokens, width, width, 4), (tokens, width, ffn, 1), (tokens, ffn, width, 1),
          # Scores [T, T] and context [T, d] per sequence and head: B·heads·T·d·T = B·T·T·H.
          (_B * _T, width, _T, 2)]


def _encoder(num_layers):
  return _layer() * num_layers  # E = H: no embedding projection.


def _mlm_head(rows, vocab_size):
  return [(rows, _H, _E, 1), (rows, _E, vocab_size, 1)]  # Dense H -> E, tied logits E -> V.


class ExperimentFlopsTest(tf.test.TestCase, parameterized.TestCase):

  def test_bert_demo_by_hand(self):
    vocab_size = testing_utils.sample_vocab_size()
    expected = _trained(*_encoder(_L), *_mlm_head(_B * _P, vocab_size))
    self.assertEqual(expected, experiment_flops.step_flops(_demo('bert_demo')))

  def test_teams_demo_by_hand(self):
    vocab_size = testing_utils.sample_vocab_size()
    k = 5
    expected = _trained(
        *_encoder(_L // 2),  # Generator: half depth, full width.
        *_mlm_head(_B * _P, vocab_size),
        *_encoder(_L),  # Discriminator.
        *_layer(), (_B * _T, _H, 1, 1),  # Attention RTD head: one layer and the logit.
        (_B * _P, _H, _E, 1), (_B * _P, _E, k + 1, 1))  # MWS head: transform, K + 1 candidates.
    self.assertEqual(expected, experiment_flops.step_flops(_demo('teams_demo')))

  def test_training_shapes_come_from_train_data(self):
    params = _demo('bert_demo')
    params.task.validation_data.global_batch_size = 1000  # Evaluation costs nothing here.
    flops = experiment_flops.step_flops(params)
    params.task.train_data.global_batch_size = 2 * _B
    self.assertEqual(2 * flops, experiment_flops.step_flops(params))

  @parameterized.named_parameters(
      ('teams', 'teams_demo', 'teams'), ('electra', 'electra_demo', 'electra'),
      ('mws', 'mws_demo', 'teams'), ('bert', 'bert_demo', 'bert'),
      ('coco_lm', 'coco_lm_demo', 'coco_lm'), ('script', 'script_demo', 'script'),
      ('taco', 'taco_demo', 'taco'))
  def test_objective_of_each_model_config(self, name, objective):
    params = _demo(name)
    counted, shapes = experiment_flops.model_shapes(params.task.model, _B, _T, _P)
    self.assertEqual(objective, counted)
    if name == 'mws_demo':
      self.assertIsNone(shapes['rtd_head'])  # "Only MWS": no RTD head is built.
    if name == 'electra_demo':  # ELECTRA's generator: full depth, half the demo width.
      self.assertEqual((_L, _H // 2), (shapes['generator']['layers'],
                                       shapes['generator']['hidden']))

  def test_every_registered_pretraining_experiment_is_counted(self):
    for name in experiments.experiment_names():
      if experiments.is_pretraining(name):
        self.assertGreater(experiment_flops.step_flops(exp_factory.get_exp_config(name)), 0, name)

  def test_teams_costs_more_than_bert_at_equal_shapes(self):
    self.assertGreater(experiment_flops.step_flops(_demo('teams_demo')),
                       experiment_flops.step_flops(_demo('bert_demo')))

  def test_other_model_configs_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'No FLOP count for a BertEncoderConfig model'):
      experiment_flops.model_shapes(testing_utils.tiny_encoder_config(), _B, _T, _P)


if __name__ == '__main__':
  tf.test.main()
