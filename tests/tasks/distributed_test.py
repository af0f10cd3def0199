"""Every pretraining objective takes the same step on 2 mirrored replicas as on one device.

One Model Garden `train_step` (plain SGD, so weight changes are the summed gradients) on a global
batch of 4 sequences, 2 per replica, whose replicas hold different numbers of tokens and masked
positions, from identical weights and seed streams, dropout off: the loss, every metric and every
updated weight must agree. That checks together the global-batch normalisation of the weighted
losses, cross-replica metric aggregation, per-example sampling that does not depend on the replica
split (`replica_random`), and COCO-LM's and TACO's negatives gathered from the global batch.
Tolerance: float32 sums taken in another order (per replica, then across replicas), rtol 1e-4.
"""

import json
import os
import subprocess
import sys
import textwrap

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
# MWS-only and ELECTRA are the TEAMS task with a loss left out: TEAMS runs every sampler, loss
# and metric of theirs on the replicas. Their other differences (ELECTRA's FFN head, narrower
# unshared generator) act within each sequence, so a run of each would repeat TEAMS' check. BERT's
# MLM head, loss and metrics run inside TACO's and SCRIPT's pretrainers.
_OBJECTIVES = ('teams', 'coco_lm', 'taco', 'script')

# Two logical CPUs need a fresh process (devices are fixed once TensorFlow starts).
_SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np, tensorflow as tf, tf_keras
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from official.core import task_factory
    from teams_tf import registry_imports
    from teams_tf.registry import experiments
    from tests import testing_utils

    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    # Rows keep 16, 14, 12, 10 tokens and 4, 3, 2, 1 masked positions: 7 on replica 0, 3 on 1.
    batch = testing_utils.pretraining_batch(batch_size=4, vocab_size=100)
    local = strategy.experimental_distribute_values_from_function(
        lambda c: {k: v[2 * c.replica_id_in_sync_group:][:2] for k, v in batch.items()})
    results = {}
    for objective in sys.argv[1:]:
      # Keras draws dropout masks from its own per-replica generators; switch them off.
      params = testing_utils.two_layer_demo_experiment(objective, dropout=False)
      task = task_factory.get_task(params.task)
      single = task.build_model()
      single(batch)
      with strategy.scope():
        mirrored = task.build_model()
        mirrored(batch)  # Creates the variables (and advances the seed stream like `single`).
        mirrored.set_weights(single.get_weights())  # Weights and the seed stream's state.
        mirrored_metrics = task.build_metrics()
        mirrored_sgd = tf_keras.optimizers.SGD(0.1)
        testing_utils.build_step_variables(mirrored, mirrored_sgd)
      before = [v.numpy() for v in single.trainable_variables]
      single_metrics = task.build_metrics()
      single_sgd = tf_keras.optimizers.SGD(0.1)
      testing_utils.build_step_variables(single, single_sgd)
      single_logs = tf.function(
          lambda: task.train_step(batch, single, single_sgd, metrics=single_metrics))()
      mirrored_logs = strategy.run(tf.function(
          lambda x: task.train_step(x, mirrored, mirrored_sgd, metrics=mirrored_metrics)),
          args=(local,))
      results[objective] = dict(
          loss=[float(single_logs['loss']), float(strategy.reduce(
              tf.distribute.ReduceOp.MEAN, mirrored_logs['loss'], axis=None))],
          metrics={a.name: [float(a.result()), float(b.result())]
                   for a, b in zip(single_metrics, mirrored_metrics)},
          updates=[[s.name, (s.numpy() - b).tolist(), (m.numpy() - b).tolist()] for s, m, b in zip(
              single.trainable_variables, mirrored.trainable_variables, before)])
    print('RESULTS ' + json.dumps(results))

    params = experiments.pretraining_experiment('teams', 'demo')
    params.task.train_data.global_batch_size = 33
    with strategy.scope():
      try:
        task_factory.get_task(params.task)
      except ValueError as e:
        print('BATCH ERROR', e)
    ''')


class MirroredEqualsOneDeviceTest(tf.test.TestCase, parameterized.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    # One process for all objectives: TensorFlow's start-up is most of each one's time.
    cls.run_result = subprocess.run([sys.executable, '-c', _SCRIPT, *_OBJECTIVES], cwd=_ROOT,
                                    capture_output=True, text=True, timeout=900, check=False)

  def setUp(self):
    super().setUp()
    self.assertEqual(0, self.run_result.returncode, self.run_result.stderr[-3000:])
    line = [row for row in self.run_result.stdout.splitlines() if row.startswith('RESULTS ')][-1]
    self.results = json.loads(line[len('RESULTS '):])

  @parameterized.parameters(*_OBJECTIVES)
  def test_same_loss_metrics_and_update(self, objective):
    result = self.results[objective]
    single_loss, mirrored_loss = result['loss']
    self.assertGreater(single_loss, 0.0)
    self.assertAllClose(single_loss, mirrored_loss, rtol=1e-4)
    for name, (single, mirrored) in result['metrics'].items():
      self.assertAllClose(single, mirrored, rtol=1e-4, atol=1e-6, msg=name)
    moved = 0
    for name, single, mirrored in result['updates']:
      # Gradients summed in another order (per replica, then across) differ in float32 by up
      # to a few 1e-6 where many tokens' contributions cancel (TACO's type embeddings: 2.3e-6
      # of a 1.2e-3 update); a wrong scale or a lost replica is off by a large fraction.
      scale = float(np.max(np.abs(single)))
      self.assertAllClose(single, mirrored, rtol=1e-4, atol=max(1e-6, 1e-2 * scale), msg=name)
      moved += bool(tf.reduce_any(tf.not_equal(single, 0.0)))
    # The step changed (nearly) every trained variable: the comparison is not of zeros.
    self.assertGreater(moved, 0.9 * len(result['updates']))

  def test_global_batch_not_divisible_by_the_replicas_is_a_clear_error(self):
    self.assertIn('BATCH ERROR task.train_data.global_batch_size=33 is not divisible by the 2 '
                  'replicas', self.run_result.stdout)


if __name__ == '__main__':
  tf.test.main()
