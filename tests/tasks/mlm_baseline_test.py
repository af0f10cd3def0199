"""The context-free MLM baseline against a NumPy count, and its place in evaluation metrics."""

import numpy as np
import tensorflow as tf

from teams_tf.tasks import mlm_baseline
from teams_tf.tasks import mlm_task
from tests import testing_utils

_MASK = 4


def _numpy_baseline(batches):
  """Most frequent target at [MASK] inputs (over all batches) plus copies, over real slots."""
  counts, copied, total = {}, 0, 0
  for word_ids, positions, ids, weights in batches:
    for b in range(ids.shape[0]):
      for p in range(ids.shape[1]):
        if not weights[b, p]:
          continue
        total += 1
        shown = word_ids[b, positions[b, p]]
        if shown == _MASK:
          counts[ids[b, p]] = counts.get(ids[b, p], 0) + 1
        copied += int(shown == ids[b, p])
  return (max(counts.values()) + copied) / total


class ContextFreeMlmAccuracyTest(tf.test.TestCase):

  def test_matches_numpy_over_several_batches(self):
    rng = np.random.default_rng(0)
    metric = mlm_baseline.ContextFreeMlmAccuracy(vocab_size=12, mask_id=_MASK)
    batches = []
    for _ in range(3):
      word_ids = rng.integers(5, 12, size=(4, 10)).astype(np.int32)
      positions = np.stack([rng.choice(10, 5, replace=False) for _ in range(4)]).astype(np.int32)
      # Skewed targets so that one id is the most frequent one.
      ids = rng.choice([5, 6, 7, 8], p=[0.55, 0.15, 0.15, 0.15], size=(4, 5)).astype(np.int32)
      weights = (rng.random((4, 5)) < 0.8).astype(np.float32)
      for b in range(4):
        for p in range(5):
          draw = rng.random()
          # 80% [MASK], 10% the original kept, 10% left as a random token.
          word_ids[b, positions[b, p]] = (_MASK if draw < 0.8 else
                                          ids[b, p] if draw < 0.9 else word_ids[b, positions[b, p]])
      batches.append((word_ids, positions, ids, weights))
      metric.update_state(*map(tf.constant, (word_ids, positions, ids, weights)))
    self.assertAllClose(_numpy_baseline(batches), metric.result().numpy(), atol=1e-6)
    metric.reset_state()
    self.assertEqual(0.0, float(metric.result()))

  def test_reported_in_evaluation_beside_mlm_accuracy_only(self):
    task = mlm_task.MlmPretrainTask(testing_utils.sample_task_config(
        mlm_task.MlmPretrainTaskConfig, testing_utils.tiny_mlm_config()))
    names = [metric.name for metric in task.build_metrics(training=False)]
    self.assertIn('mlm_context_free_accuracy', names)
    self.assertNotIn('mlm_context_free_accuracy',
                     [metric.name for metric in task.build_metrics(training=True)])


if __name__ == '__main__':
  tf.test.main()
