"""COCO-LM sequence contrastive loss (Eq. 3) against NumPy, symmetry, and global negatives."""

import os
import subprocess
import sys
import textwrap

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.losses import contrastive

_ROOT = os.path.join(os.path.dirname(__file__), '..', '..')


def _numpy_infonce(first, second, temperature):
  views = np.concatenate([first, second], 0)
  views = views / np.linalg.norm(views, axis=-1, keepdims=True)
  n = len(first)
  losses = []
  for i in range(2 * n):
    partner = (i + n) % (2 * n)
    scores = np.array([views[i] @ views[j] / temperature for j in range(2 * n)])
    others = [j for j in range(2 * n) if j != i]
    losses.append(-(scores[partner] - np.log(np.sum(np.exp(scores[others])))))
  return np.mean(losses)


class SequenceContrastiveLossTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters(1.0, 0.5)
  def test_matches_numpy_infonce(self, temperature):
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(2, 5, 6)).astype(np.float32)
    self.assertAllClose(_numpy_infonce(first, second, temperature),
                        contrastive.sequence_contrastive_loss(first, second, temperature),
                        rtol=1e-5)

  def test_symmetric_in_its_two_views(self):
    first, second = np.random.default_rng(1).normal(size=(2, 4, 8)).astype(np.float32)
    self.assertAllClose(contrastive.sequence_contrastive_loss(first, second),
                        contrastive.sequence_contrastive_loss(second, first), rtol=1e-6)

  def test_aligned_pairs_score_lower_than_shuffled_ones(self):
    first = np.random.default_rng(2).normal(size=(6, 8)).astype(np.float32)
    aligned = contrastive.sequence_contrastive_loss(first, first * 2.0, temperature=0.1)
    shuffled = contrastive.sequence_contrastive_loss(first, np.roll(first, 1, 0), 0.1)
    self.assertLess(float(aligned), float(shuffled))

  def test_pair_cosine_similarities_match_numpy(self):
    first, second = np.random.default_rng(4).normal(size=(2, 3, 5)).astype(np.float32)
    views = np.concatenate([first, second], 0)
    views /= np.linalg.norm(views, axis=-1, keepdims=True)
    cosines = views @ views.T
    positive = np.mean([cosines[k, k + 3] for k in range(3)])
    negative = np.mean([cosines[i, j] for i in range(6) for j in range(6)
                        if i != j and abs(i - j) != 3])
    got = contrastive.pair_cosine_similarities(first, second)
    self.assertAllClose((positive, negative), got, atol=1e-6)

  def test_token_alignment_loss_matches_numpy_infonce_with_fixed_pairs(self):
    rng = np.random.default_rng(5)
    anchors, positives = rng.normal(size=(2, 6, 4)).astype(np.float32)
    negatives = rng.normal(size=(6, 3, 4)).astype(np.float32)
    weights = np.array([1, 1, 0, 1, 1, 1], np.float32)

    def cos(a, b):
      return a @ b / np.linalg.norm(a) / np.linalg.norm(b)

    losses = []
    for n in range(6):
      positive = np.exp(cos(anchors[n], positives[n]) / 0.07)
      negative = sum(np.exp(cos(anchors[n], negatives[n, k]) / 0.07) for k in range(3))
      losses.append(-np.log(positive / (positive + negative)))
    expected = np.sum(np.array(losses) * weights) / weights.sum()
    self.assertAllClose(expected, contrastive.token_alignment_contrastive_loss(
        anchors, positives, negatives, weights, temperature=0.07), rtol=1e-4)

  def test_negatives_come_from_the_global_batch_across_replicas(self):
    # Two logical CPUs need a fresh process (devices are fixed once TensorFlow starts).
    script = textwrap.dedent('''
        import numpy as np, tensorflow as tf
        cpu = tf.config.list_physical_devices('CPU')[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from teams_tf.losses import contrastive
        first, second = np.random.default_rng(3).normal(size=(2, 4, 6)).astype(np.float32)
        strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
        def shard(context):
          start = 2 * context.replica_id_in_sync_group
          rows = slice(start, start + 2)
          return first[rows], second[rows]
        a = strategy.experimental_distribute_values_from_function(lambda c: shard(c)[0])
        b = strategy.experimental_distribute_values_from_function(lambda c: shard(c)[1])
        per_replica = strategy.run(
            tf.function(contrastive.sequence_contrastive_loss), args=(a, b))
        mean = strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)
        print(float(mean), float(contrastive.sequence_contrastive_loss(first, second)))
        ''')
    result = subprocess.run([sys.executable, '-c', script], cwd=_ROOT, capture_output=True,
                            text=True, timeout=300, check=True)
    distributed, single = map(float, result.stdout.split()[-2:])
    self.assertAllClose(single, distributed, rtol=1e-5)


if __name__ == '__main__':
  tf.test.main()
