"""Every objective's demo trains under mixed_bfloat16 with finite, falling losses.

bfloat16 is this project's default for the paper sizes (faster on CPUs with AVX-512 BF16 and on
TPUs; `tools/benchmark_pretrain.py`), and it keeps only 8 mantissa bits: a loss, sampler or
log-sum-exp computed in bfloat16 instead of float32 shows up as a NaN, an infinity or a loss that
stops falling. Each `<objective>_demo` model (pre-LN, relative positions; 2 of its 4 layers,
which hold every kind of layer, head and sampler: `testing_utils.two_layer_demo_experiment`) takes
15 AdamW steps on a stream of real batches of the embedded sample corpus under `mixed_bfloat16`;
every loss term must stay finite and the mean training loss of the last 3 steps must be below that
of the first 3.
"""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
import tf_keras

from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from tests import testing_utils

_STEPS = 15


class MixedPrecisionTest(tf.test.TestCase, parameterized.TestCase):

  # MWS-only is the TEAMS pretrainer without its RTD head and loss: TEAMS trains every layer
  # and loss of it.
  @parameterized.named_parameters(
      (objective, objective)
      for objective in ('teams', 'electra', 'bert', 'coco_lm', 'taco', 'script'))
  def test_demo_trains_finitely_in_bfloat16(self, objective):
    self.enterContext(testing_utils.keras_policy('mixed_bfloat16'))
    tf_keras.utils.set_random_seed(0)
    config = testing_utils.two_layer_demo_experiment(objective).task
    config.train_data.global_batch_size = 8
    config.train_data.seed = 1
    task = task_factory.get_task(config)
    model = task.build_model()
    optimizer = testing_utils.constant_lr_optimizer(1e-3)
    metrics = task.build_metrics()
    step = tf.function(lambda batch: task.train_step(batch, model, optimizer, metrics=metrics))
    batches = iter(task.build_inputs(config.train_data))
    testing_utils.build_step_variables(model, optimizer, next(batches))

    losses = []
    for i in range(_STEPS):
      for metric in metrics:
        metric.reset_state()
      losses.append(float(step(next(batches))['loss']))
      terms = {m.name: float(m.result()) for m in metrics}
      self.assertTrue(np.isfinite(losses[-1]), f'step {i}: loss {losses[-1]}, terms {terms}')
      self.assertEqual([], [name for name, value in terms.items() if not np.isfinite(value)],
                       f'step {i}: {terms}')
    # The layers computed in bfloat16 and kept float32 weights.
    self.assertIn('bfloat16', {layer.compute_dtype for layer in model.submodules
                               if isinstance(layer, tf_keras.layers.Layer)})
    self.assertEqual({tf.float32}, {v.dtype for v in model.trainable_variables})
    self.assertLess(np.mean(losses[-3:]), np.mean(losses[:3]), losses)


if __name__ == '__main__':
  tf.test.main()
