"""Every objective's forward pass, losses and gradients compile with XLA under mixed_bfloat16.

The model call, `build_losses` and the gradient inside `tf.function(jit_compile=True)` on CPU
under `mixed_bfloat16`, the precision the `*_small/base/large` experiments run on TPUs (bfloat16
activations, float32 variables and losses): an op without an XLA kernel for bfloat16, or a
dtype mix XLA rejects, fails here instead of on the first step of a Cloud TPU job. The float32
compile is `tests/tasks/xla_step_test.py`, which also compares the compiled step with the graph
step. (The optimizer update is Model Garden's AdamW, which Model Garden runs on TPUs itself.)
"""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from tests import testing_utils


class XlaCompileTest(tf.test.TestCase, parameterized.TestCase):

  # MWS-only is the TEAMS pretrainer without its RTD head and loss: TEAMS compiles every layer
  # and loss of it. BERT's MLM head and loss compile inside TACO's and SCRIPT's pretrainers.
  @parameterized.named_parameters(
      (objective, objective) for objective in ('teams', 'electra', 'coco_lm', 'taco', 'script'))
  def test_losses_and_gradients_compile_in_bfloat16(self, objective):
    self.enterContext(testing_utils.keras_policy('mixed_bfloat16'))
    config = testing_utils.two_layer_demo_experiment(objective).task
    task = task_factory.get_task(config)
    model = task.build_model()
    batch = testing_utils.pretraining_batch(batch_size=4, vocab_size=100)
    model(batch)

    @tf.function(jit_compile=True)
    def loss_and_gradients():
      with tf.GradientTape() as tape:
        loss = task.build_losses(batch, model(batch, training=True))
      return loss, tape.gradient(loss, model.trainable_variables)

    loss, gradients = loss_and_gradients()
    self.assertEqual(tf.float32, loss.dtype)
    self.assertTrue(np.isfinite(float(loss)))
    # Every trained variable gets a finite gradient from the compiled step.
    self.assertEqual([], [v.name for v, g in zip(model.trainable_variables, gradients)
                          if g is None or not np.all(np.isfinite(tf.convert_to_tensor(g)))])


if __name__ == '__main__':
  tf.test.main()
