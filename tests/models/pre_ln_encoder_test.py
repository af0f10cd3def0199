"""Pre-LN encoders (`encoder.norm_first`) end in a final LayerNorm that fine-tuning keeps."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders
from official.nlp.modeling import networks

from teams_tf.models import mlm_pretrainer
from teams_tf.models import teams_pretrainer
from teams_tf.networks import shared_encoders
from teams_tf.tasks import teams_task
from teams_tf.training import run_settings
from tests import testing_utils

_BUILDS = testing_utils.PRETRAINER_BUILDS


def _pre_ln(config_fn):
  config = config_fn()
  config.encoder.norm_first = True
  # Absolute positions only: the final LayerNorm alone takes the encoder off BertEncoderV2.
  config.relative_position_bias = False
  return config


class PreLnEncoderTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(*_BUILDS)
  def test_output_is_normalized_and_fine_tuning_restores_it(self, build, config_fn):
    config = _pre_ln(config_fn)
    model = build(config)
    batch = testing_utils.pretraining_batch()
    model(batch)
    kept = testing_utils.kept_encoder(model)
    self.assertFalse(shared_encoders.has_bert_v2_layout(kept))
    inputs = testing_utils.encoder_inputs(batch)
    output = kept(inputs)['sequence_output'].numpy()
    # The LayerNorm starts as the identity affine map: every token vector is standardized.
    np.testing.assert_allclose(output.mean(-1), 0.0, atol=1e-4)
    np.testing.assert_allclose(output.std(-1), 1.0, atol=1e-3)
    # Fine-tuning builds the encoder a run's params.yaml describes and restores the kept one,
    # final LayerNorm included.
    path = tf.train.Checkpoint(**model.checkpoint_items).save(self.get_temp_dir() + '/ckpt')
    encoder_config = run_settings.kept_encoder_config(config.as_dict(), 'params.yaml', path)
    self.assertEqual('any', encoder_config.type)
    encoder = encoders.build_encoder(encoder_config)
    encoder(inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).assert_existing_objects_matched()
    self.assertTrue(any(layer.name == 'final_layer_norm' for layer in encoder.layers))
    self.assertAllClose(output, encoder(inputs)['sequence_output'], atol=1e-5)

  def test_post_ln_encoders_keep_model_gardens_layout(self):
    bert = mlm_pretrainer.build_mlm_pretrainer(testing_utils.tiny_mlm_config())
    self.assertIsInstance(bert.encoder_network, networks.BertEncoderV2)
    teams = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config())
    teams(testing_utils.pretraining_batch())
    self.assertTrue(shared_encoders.has_bert_v2_layout(teams.discriminator_network))
    self.assertFalse(any('final_layer_norm' in v.name for v in teams.variables))

  def test_teams_task_layer_export_is_refused(self):
    config = _pre_ln(testing_utils.tiny_teams_config).replace(mws_task_layer=True)
    with self.assertRaisesRegex(ValueError, 'encoder.norm_first=True keep the discriminator'):
      teams_task.TeamsPretrainTask(
          testing_utils.sample_task_config(teams_task.TeamsPretrainTaskConfig, config)
      ).build_model()


if __name__ == '__main__':
  tf.test.main()
