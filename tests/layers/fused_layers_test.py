"""Model Garden's layers switched to the fused kernels: dropout masks, and `fuse` on a
pretrainer."""

import numpy as np
import tensorflow as tf
import tf_keras

from official.core import task_factory
from official.modeling import activations

from teams_tf.layers import fused_layers
from teams_tf.ops import replica_random
from tests import testing_utils


class DropoutTest(tf.test.TestCase):

  def test_keep_rate_scaling_and_gradient_mask(self):
    rate = 0.1
    x = tf.constant(np.random.default_rng(2).uniform(1, 2, size=(16, 4, 32, 32)), tf.float32)
    layer = fused_layers.Dropout(rate)
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = layer(x, training=True)
    gradient = tape.gradient(y, x)
    kept = y.numpy() != 0
    n = kept.size
    # Binomial: 5 standard deviations of the dropped share.
    self.assertAllClose(rate, 1 - kept.mean(), atol=5 * np.sqrt(rate * (1 - rate) / n))
    self.assertAllClose(x.numpy()[kept] / (1 - rate), y.numpy()[kept], rtol=1e-6)
    # The backward pass redraws exactly the forward pass's mask.
    self.assertAllEqual(kept, gradient.numpy() != 0)
    self.assertAllClose(np.full(kept.sum(), 1 / (1 - rate)), gradient.numpy()[kept])
    # No structure across rows: the drop rate is the same in every row and column block.
    self.assertLess(np.abs((1 - kept).mean(axis=(0, 1, 2)) - rate).max(), 0.05)
    again = layer(x, training=True).numpy() != 0
    self.assertGreater((again != kept).mean(), 0.1)

  def test_identity_outside_training_and_at_rate_zero(self):
    x = tf.random.normal([4, 8])
    self.assertAllEqual(x, fused_layers.Dropout(0.5)(x, training=False))
    self.assertAllEqual(x, fused_layers.Dropout(0.0)(x, training=True))


class FuseTest(tf.test.TestCase):

  def test_switches_every_dropout_layer_norm_and_gelu_of_a_pretrainer(self):
    params = testing_utils.two_layer_demo_experiment('electra')
    # The papers' blocks (Model Garden's TransformerEncoderBlock: post-LN, absolute positions,
    # dropout), not the demo recipe's.
    params.task.model.encoder.norm_first = False
    params.task.model.relative_position_bias = False
    params.task.model.encoder.dropout_rate = params.task.model.encoder.attention_dropout_rate = 0.1
    params.task.fuse_elementwise_ops = False
    task = task_factory.get_task(params.task)
    model = task.build_model()
    batch = next(iter(task.build_inputs(params.task.train_data)))
    # The generator's samples come from a seed stream that advances per call: rewind it.
    seeds = [layer.state for layer in model.submodules
             if isinstance(layer, replica_random.SeedStream)]
    seed_states = [seed.numpy() for seed in seeds]
    before = model(batch, training=False)
    names = sorted(variable.name for variable in model.variables)
    counts = fused_layers.fuse(model)
    remaining = [layer.name for layer in model.submodules
                 if type(layer) in (tf_keras.layers.Dropout, tf_keras.layers.LayerNormalization)
                 or getattr(layer, 'activation', None) is activations.gelu]
    self.assertEqual([], remaining)
    # Three transformer blocks (two discriminator layers, one generator layer): four dropouts
    # (attention probabilities, attention output, feed-forward (rate 0), output), two layer norms
    # and a GELU each; the shared embeddings' dropout and layer norm; the generator's MaskedLM
    # head (its GELU and its dense layer's, its layer norm); the RTD head's dense GELU.
    self.assertEqual(dict(dropout=13, layer_norm=8, gelu=6), counts)
    self.assertEqual(names, sorted(variable.name for variable in model.variables))
    for seed, state in zip(seeds, seed_states):
      seed.assign(state)
    after = model(batch, training=False)
    for key in ('mlm_logits', 'rtd_logits'):
      self.assertAllClose(before[key], after[key], atol=1e-4, rtol=1e-4, msg=key)
    # Built by the task with the default config, the model is fused already.
    params.task.fuse_elementwise_ops = True
    self.assertEqual(dict(dropout=0, layer_norm=0, gelu=0),
                     fused_layers.fuse(task_factory.get_task(params.task).build_model()))

  def test_a_model_without_model_gardens_layers_is_a_one_line_error(self):
    # What an upstream Model Garden whose blocks stopped creating tf_keras layers looks like.
    model = tf_keras.Sequential([tf_keras.Input((3,)), tf_keras.layers.Dense(2)])
    with self.assertRaisesRegex(RuntimeError, r'^tf-models-official \S+: the model holds no '
                                r'tf_keras Dropout.*fuse_elementwise_ops=false'):
      fused_layers.fuse(model)


if __name__ == '__main__':
  tf.test.main()
