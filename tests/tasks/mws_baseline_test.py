"""The context-free MWS baseline against a NumPy loop, and its place in evaluation."""

import numpy as np
import tensorflow as tf

from teams_tf.tasks import mws_baseline
from tests import testing_utils


def _numpy_accuracy(batches, vocab_size):
  """Each weighted prediction scored by the per-id share of originals over earlier batches."""
  seen, original = np.zeros(vocab_size), np.zeros(vocab_size)
  correct = total = 0.0
  for candidates, weights in batches:
    for candidate_set, weight in zip(candidates.reshape(-1, candidates.shape[-1]), weights.ravel()):
      if not weight:
        continue
      overall = original.sum() / seen.sum() if seen.sum() else 0.0
      scores = [original[i] / seen[i] if seen[i] else overall for i in candidate_set]
      tied = [s == max(scores) for s in scores]
      correct += weight * tied[0] / sum(tied)
      total += weight
    for candidate_set, weight in zip(candidates.reshape(-1, candidates.shape[-1]), weights.ravel()):
      seen[candidate_set] += weight
      original[candidate_set[0]] += weight
  return correct / total


def _candidate_sets(rng, shape, vocab_size, num_candidates, original_ids):
  """[*shape, K + 1] distinct ids: column 0 from `original_ids`, the others uniformly sampled."""
  sets = np.zeros(shape + (num_candidates,), np.int32)
  for index in np.ndindex(*shape):
    original = original_ids[index]
    others = rng.choice([i for i in range(vocab_size) if i != original], num_candidates - 1,
                        replace=False)
    sets[index] = [original, *others]
  return sets


class ContextFreeMwsAccuracyTest(tf.test.TestCase):

  def test_matches_numpy_over_several_batches(self):
    rng = np.random.default_rng(0)
    metric = mws_baseline.ContextFreeMwsAccuracy(vocab_size=15)
    batches = []
    for _ in range(6):
      # Originals concentrated on low ids, negatives uniform: identity carries signal.
      originals = np.minimum(rng.geometric(0.3, size=(3, 5)) - 1, 14)
      candidates = _candidate_sets(rng, (3, 5), 15, 4, originals)
      weights = (rng.random((3, 5)) < 0.8).astype(np.float32)
      batches.append((candidates, weights))
      metric.update_state(tf.constant(candidates), tf.constant(weights))
    expected = _numpy_accuracy(batches, 15)
    self.assertBetween(expected, 0.4, 0.95)  # Well above chance (1/4): the signal is found.
    self.assertAllClose(expected, metric.result().numpy(), atol=1e-6)
    metric.reset_state()
    self.assertEqual(0.0, float(metric.result()))

  def test_exchangeable_candidates_give_chance(self):
    # Originals drawn like the negatives: identity tells nothing, the baseline is 1/(K + 1).
    rng = np.random.default_rng(1)
    metric = mws_baseline.ContextFreeMwsAccuracy(vocab_size=50)
    for _ in range(20):
      sets = np.stack([rng.choice(50, 6, replace=False) for _ in range(64)]).reshape(8, 8, 6)
      metric.update_state(tf.constant(sets, tf.int32), tf.ones([8, 8]))
    self.assertAllClose(1 / 6, float(metric.result()), atol=0.03)

  def test_reported_in_teams_evaluation_only(self):
    training_metrics, results = testing_utils.untrained_teams_evaluation(num_batches=4)
    self.assertNotIn('mws_context_free_accuracy', training_metrics)
    # An untrained generator samples rare negatives: the original is the most frequent candidate
    # of its set, so identity alone picks it well above chance (the first batch, scored with no
    # counts yet, is at chance).
    chance = 1 / (testing_utils.tiny_teams_config().num_negatives + 1)
    self.assertGreater(results['mws_context_free_accuracy'], chance + 0.05)


if __name__ == '__main__':
  tf.test.main()
