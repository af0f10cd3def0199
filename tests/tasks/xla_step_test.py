"""The XLA-compiled training step computes what the graph step computes, for every objective.

`tools/benchmark_pretrain.py` times each objective with and without `jit_compile`, and TPU jobs
always compile; a fusion or layout that changed a loss would make those numbers incomparable.
One Model Garden `train_step` from identical weights and seed stream, once in `tf.function` and
once in `tf.function(jit_compile=True)`: every loss term and metric, and every weight update, must
agree to float32 reassociation error. The optimizer is plain SGD, whose update is the gradient
itself (Adam's first update, ±lr wherever a gradient is nonzero, would turn rounding-level
gradients into full-size differences).

XLA lays out TensorFlow's Philox stream differently from the CPU kernel (see `replica_random`), so
the two steps would draw different (equally distributed) seeds and samples; the test replaces
`replica_random.uniform` and `stateless_split` by an integer hash, which both compute bit for bit,
and switches dropout off. That isolates what is under test: the compiled model, losses, gradients
and update. The samplers' own distributions are tested in tests/layers.
"""

from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tf_keras

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.ops import replica_random
from tests import testing_utils


def _hash(values):
  """A 32-bit integer hash of int64 `values`, elementwise (computed the same way by XLA)."""
  def low32(v):
    return tf.bitwise.bitwise_and(v, 0xFFFFFFFF)

  def mix(v):
    return tf.bitwise.bitwise_xor(v, tf.bitwise.right_shift(v, 16))

  x = low32(values)
  for _ in range(2):
    x = low32(mix(x) * 0x45d9f3b)
  return mix(x)


def _hash_uniform(shape, seed, row_offset=None):
  """Uniform [0, 1) float32 from a hash of (element index, seed), in place of Philox."""
  del row_offset  # One device.
  shape = tf.cast(shape, tf.int64)
  seed = _hash(tf.cast(seed, tf.int64))
  x = _hash(tf.range(tf.reduce_prod(shape), dtype=tf.int64) + seed[0] * 1000003 + seed[1])
  uniform = (tf.cast(tf.bitwise.bitwise_and(x, 0xFFFFFF), tf.float32) + 0.5) / 2**24
  return tf.reshape(uniform, shape)


def _hash_split(seed, num=2, alg=None):
  """`num` new [2] seeds from a hash of `seed`, in place of Philox's `stateless_split`."""
  del alg
  seed = tf.cast(seed, tf.int64)
  index = tf.range(2 * num, dtype=tf.int64)
  return tf.reshape(_hash(index * 7919 + seed[0] * 1000003 + _hash(seed[1:])), [num, 2])


class XlaStepTest(tf.test.TestCase, parameterized.TestCase):

  def _step(self, params, batch, initial_weights, jit_compile):
    """Losses, metrics and updated weights of one train_step from `initial_weights`."""
    task = task_factory.get_task(params.task)
    model = task.build_model()
    model(batch)
    model.set_weights(initial_weights)  # Weights and the seed stream's state.
    optimizer = tf_keras.optimizers.SGD(0.1)
    testing_utils.build_step_variables(model, optimizer)
    metrics = task.build_metrics(training=True)

    @tf.function(jit_compile=jit_compile)
    def step(inputs):
      return task.train_step(inputs, model, optimizer, metrics=metrics)

    logs = step(batch)
    values = {key: float(value) for key, value in logs.items()}
    values.update({metric.name: float(metric.result()) for metric in metrics})
    return values, [v.numpy() for v in model.trainable_variables]

  # One objective per pretrainer class. MWS-only and ELECTRA are the TEAMS pretrainer with a loss
  # left out (ELECTRA's FFN head acts within each token); TACO and SCRIPT run BERT's MLM head and
  # loss inside their own. They and ELECTRA also compile under mixed_bfloat16 in
  # tests/tasks/xla_compile_test.py.
  @parameterized.named_parameters(
      (objective, objective) for objective in ('teams', 'coco_lm', 'taco', 'script'))
  def test_xla_step_equals_graph_step(self, objective):
    params = testing_utils.two_layer_demo_experiment(objective, dropout=False)
    batch = testing_utils.pretraining_batch(batch_size=4, vocab_size=100)
    tf_keras.utils.set_random_seed(0)
    reference = task_factory.get_task(params.task).build_model()
    reference(batch)
    initial = reference.get_weights()
    with mock.patch.object(replica_random, 'uniform', _hash_uniform), mock.patch.object(
        tf.random.experimental, 'stateless_split', _hash_split):
      graph_values, graph_weights = self._step(params, batch, initial, jit_compile=False)
      xla_values, xla_weights = self._step(params, batch, initial, jit_compile=True)

    self.assertEqual(sorted(graph_values), sorted(xla_values))
    for key, value in graph_values.items():
      self.assertTrue(np.isfinite(value), key)
      self.assertAllClose(value, xla_values[key], rtol=1e-4, atol=1e-5, msg=key)
    updated = 0
    for before, graph, xla in zip(reference.trainable_variables, graph_weights, xla_weights):
      # SGD's update is -0.1 x the gradient: the weights compare the two steps' gradients.
      update = np.abs(graph - before.numpy()).max()
      updated += update > 1e-6
      self.assertAllClose(graph - before.numpy(), xla - before.numpy(),
                          atol=1e-6 + 1e-3 * update, msg=before.name)
    self.assertGreater(updated, len(graph_weights) // 2)


if __name__ == '__main__':
  tf.test.main()
