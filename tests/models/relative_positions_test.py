"""`relative_position_bias` for every objective: one T5 bias table per encoder, trained, kept."""

from absl.testing import parameterized
import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf.configs import encoders as encoder_configs
from teams_tf.models import teams_pretrainer
from teams_tf.tasks import script_task
from teams_tf.tasks import teams_task
from tests import testing_utils

_RELATIVE = dict(relative_position_bias=True, relative_position_num_buckets=8,
                 relative_position_max_distance=16)
# COCO-LM has relative positions by default (tests/models/coco_lm_pretrainer_test.py).
_BUILDS = tuple(build for build in testing_utils.PRETRAINER_BUILDS if build[0] != 'coco_lm')


class RelativePositionsTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(*_BUILDS)
  def test_one_trained_bias_table_that_fine_tuning_restores(self, build, config_fn):
    config = config_fn().replace(**_RELATIVE)
    model = build(config)
    batch = testing_utils.pretraining_batch()
    with tf.GradientTape() as tape:
      outputs = model(batch, training=True)
      loss = tf.reduce_mean(outputs['mlm_logits'] ** 2)
      if 'rtd_logits' in outputs:
        loss += tf.reduce_mean(outputs['rtd_logits'] ** 2)
    tables = [v for v in model.trainable_variables if 'rel_embedding' in v.name]
    # TEAMS' generator shares its bottom layer, hence the discriminator's table.
    self.assertLen(tables, 1)
    self.assertEqual((8, 2), tuple(tables[0].shape))
    gradient = tape.gradient(loss, tables[0])
    self.assertGreater(float(tf.reduce_sum(tf.abs(gradient))), 0.0)
    # The kept encoder restores into the encoder fine-tuning builds for these settings.
    path = tf.train.Checkpoint(**model.checkpoint_items).save(self.get_temp_dir() + '/ckpt')
    encoder = encoders.build_encoder(encoders.EncoderConfig(
        type='any', any=encoder_configs.RelativePositionEncoderConfig(
            **config.encoder.as_dict(), relative_position_num_buckets=8,
            relative_position_max_distance=16)))
    inputs = testing_utils.encoder_inputs(batch)
    encoder(inputs)
    tf.train.Checkpoint(encoder=encoder).read(path).assert_existing_objects_matched()
    self.assertAllClose(testing_utils.kept_encoder(model)(inputs)['sequence_output'],
                        encoder(inputs)['sequence_output'], atol=1e-5)

  def test_unshared_teams_generator_has_its_own_table(self):
    model = teams_pretrainer.build_teams_pretrainer(
        testing_utils.tiny_teams_config(num_shared_layers=0, **_RELATIVE))
    model(testing_utils.pretraining_batch())
    names = sorted(v.name for v in model.trainable_variables if 'rel_embedding' in v.name)
    self.assertEqual(['generator/relative_position_bias/rel_embedding:0',
                      'relative_position_bias/rel_embedding:0'], names)

  @parameterized.named_parameters(
      ('teams_rtd_task_layer', teams_task.TeamsPretrainTask, teams_task.TeamsPretrainTaskConfig,
       testing_utils.tiny_teams_config, dict(exported_representation='rtd_task_layer'),
       'keep the discriminator itself'),
      ('teams_buckets', teams_task.TeamsPretrainTask, teams_task.TeamsPretrainTaskConfig,
       testing_utils.tiny_teams_config, dict(relative_position_num_buckets=5),
       'relative_position_num_buckets=5'),
      ('script_straight_through', script_task.ScriptPretrainTask,
       script_task.ScriptPretrainTaskConfig, testing_utils.tiny_script_config,
       dict(straight_through=True), 'straight_through=True'))
  def test_unsupported_combination_is_named(self, task_cls, task_config_cls, config_fn, overrides,
                                            message):
    config = config_fn().replace(**dict(_RELATIVE, **overrides))
    with self.assertRaisesRegex(ValueError, message):
      task_cls(testing_utils.sample_task_config(task_config_cls, config)).build_model()


if __name__ == '__main__':
  tf.test.main()
