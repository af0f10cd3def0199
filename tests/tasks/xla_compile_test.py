"""Every objective's forward pass, losses and gradients compile with XLA, as TPUs run them.

The model call, `build_losses` and the gradient inside `tf.function(jit_compile=True)` on CPU: an
op without an XLA kernel or a shape XLA cannot infer in this project's code fails here instead of
on the first step of a Cloud TPU job. (The optimizer update is Model Garden's AdamW, which
Model Garden runs on TPUs itself.)
"""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import experiments
from tests import testing_utils


class XlaCompileTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters('teams', 'electra', 'bert', 'mws', 'coco_lm', 'taco', 'script')
  def test_losses_and_gradients_compile(self, objective):
    task = task_factory.get_task(experiments.pretraining_experiment(objective, 'demo').task)
    model = task.build_model()
    batch = testing_utils.pretraining_batch(batch_size=4, vocab_size=100)
    model(batch)

    @tf.function(jit_compile=True)
    def loss_and_gradients():
      with tf.GradientTape() as tape:
        loss = task.build_losses(batch, model(batch, training=True))
      return loss, tape.gradient(loss, model.trainable_variables)

    loss, gradients = loss_and_gradients()
    self.assertTrue(np.isfinite(float(loss)))
    # Every trained variable gets a finite gradient from the compiled step.
    self.assertEqual([], [v.name for v, g in zip(model.trainable_variables, gradients)
                          if g is None or not np.all(np.isfinite(tf.convert_to_tensor(g)))])


if __name__ == '__main__':
  tf.test.main()
