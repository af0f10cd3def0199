"""The training log keeps what a user reads and drops Model Garden's config dumps."""

import logging as logging_lib

import tensorflow as tf

from teams_tf.utils import log_filters


def _record(pathname, message):
  return logging_lib.LogRecord('absl', logging_lib.INFO, pathname, 1, message, None, None)


class QuietLogsTest(tf.test.TestCase):

  def test_drops_layer_config_dumps_and_saver_timings(self):
    quiet = log_filters.QuietLogs()
    for pathname, message in (
        ('/venv/official/nlp/modeling/layers/transformer_scaffold.py',
         "RelativePositionTransformerLayer configs: {'name': 'transformer/layer_0'}"),
        ('/venv/official/nlp/modeling/networks/encoder_scaffold.py',
         "EncoderScaffold configs: {'num_hidden_instances': 4}"),
        ('/venv/tensorflow/python/checkpoint/functional_saver.py',
         'Sharding callback duration: 149 microseconds'),
        ('/venv/orbit/controller.py', 'train | step: 50 | steps/sec: 4.3')):
      self.assertFalse(quiet.filter(_record(pathname, message)), pathname)

  def test_keeps_what_the_run_says_about_itself(self):
    quiet = log_filters.QuietLogs()
    for pathname, message in (
        ('/work/teams_tf/train.py', "Running train_and_eval of 'teams_demo' on 1 replica(s)"),
        ('/venv/official/nlp/modeling/networks/encoder_scaffold.py', 'Unexpected input shape'),
        ('/work/teams_tf/tasks/pretrain_base.py', 'Fused into one XLA kernel per pass')):
      self.assertTrue(quiet.filter(_record(pathname, message)), pathname)


if __name__ == '__main__':
  tf.test.main()
