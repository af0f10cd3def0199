"""The context-free RTD baseline against a pairwise NumPy AUC, and its place in evaluation."""

import numpy as np
import tensorflow as tf

from teams_tf.tasks import rtd_baseline
from tests import testing_utils


def _numpy_auc(batches):
  """Mann-Whitney AUC over all (original, replaced) token pairs; even batches form one half, odd
  ones the other, and each token is scored by its id's share of originals in the other half."""
  halves = []
  for half in (0, 1):
    ids, labels, weights = (np.concatenate([batch[i].ravel() for batch in batches[half::2]])
                            for i in range(3))
    halves.append((ids[weights > 0], labels[weights > 0]))
  scores, all_labels = [], []
  for half in (0, 1):
    ids, labels = halves[half]
    other_ids, other_labels = halves[1 - half]
    for token, label in zip(ids, labels):
      matches = other_labels[other_ids == token]
      scores.append(matches.mean() if matches.size else other_labels.mean())
      all_labels.append(label)
  scores, all_labels = np.array(scores), np.array(all_labels)
  original, replaced = scores[all_labels == 1], scores[all_labels == 0]
  wins = (original[:, None] > replaced[None, :]).sum()
  ties = (original[:, None] == replaced[None, :]).sum()
  return (wins + 0.5 * ties) / (len(original) * len(replaced))


class ContextFreeRtdAucTest(tf.test.TestCase):

  def test_matches_pairwise_numpy_over_several_batches(self):
    rng = np.random.default_rng(0)
    metric = rtd_baseline.ContextFreeRtdAuc(vocab_size=20)
    batches = []
    for _ in range(5):
      ids = rng.integers(0, 20, size=(4, 12)).astype(np.int32)
      # Replacement more likely for high ids, so identity carries some signal.
      labels = (rng.random((4, 12)) > ids / 30).astype(np.int32)
      weights = (rng.random((4, 12)) < 0.85).astype(np.float32)
      batches.append((ids, labels, weights))
      metric.update_state(*map(tf.constant, (ids, labels, weights)))
    expected = _numpy_auc(batches)
    self.assertBetween(expected, 0.55, 0.95)
    self.assertAllClose(expected, metric.result().numpy(), atol=1e-6)
    metric.reset_state()
    self.assertEqual(0.0, float(metric.result()))

  def test_untrained_generator_is_told_apart_by_identity(self):
    # A random generator samples ids uniformly, so an id's share of originals follows its
    # frequency in text, which identity alone tells apart (on held-out halves, not in-sample).
    training_metrics, results = testing_utils.untrained_teams_evaluation(num_batches=2)
    self.assertNotIn('rtd_context_free_auc', training_metrics)
    self.assertGreater(results['rtd_context_free_auc'], 0.6)


if __name__ == '__main__':
  tf.test.main()
