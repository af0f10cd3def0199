"""TACO's contextual score: pair sampling, the cosine means, and tools/contextual_score.py."""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from teams_tf.serving import contextual_score
from tests.serving import export_testing_utils as utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


class ContextualScoreTest(tf.test.TestCase):

  def test_pairs_are_same_context_other_token_and_other_context(self):
    weights = np.array([[0, 1, 1, 1, 0], [0, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    anchors, intra, inter = contextual_score.sample_pairs(weights, np.random.default_rng(0))
    # Row 1 has a single token (no intra pair) and row 3 none: 3 + 2 anchors.
    self.assertEqual([(0, 1), (0, 2), (0, 3), (2, 1), (2, 2)], [tuple(a) for a in anchors])
    for (b, i), (bj, j), (bk, k) in zip(anchors, intra, inter):
      self.assertEqual(b, bj)
      self.assertNotEqual(i, j)
      self.assertNotEqual(b, bk)
      self.assertEqual(1, weights[bj, j])
      self.assertEqual(1, weights[bk, k])
    self.assertEmpty(contextual_score.sample_pairs(weights[:1], np.random.default_rng(0))[0])

  def test_means_and_score(self):
    # Every token of context 0 points along x (scaled), of context 1 along y: intra 1, inter 0.
    outputs = np.zeros((2, 4, 3))
    outputs[0, :, 0] = [1, 2, 3, 4]
    outputs[1, :, 1] = [5, 6, 7, 8]
    similarity = contextual_score.ContextualSimilarity()
    contextual_score.update(similarity, outputs, np.ones((2, 4)), np.random.default_rng(1))
    self.assertEqual(8, similarity.count)
    self.assertAllClose((1.0, 0.0, 1.0), (similarity.intra, similarity.inter, similarity.score))

  def test_a_batch_of_one_context_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'batch_size=1 must be >= 2: inter-context pairs'):
      contextual_score.score_contexts(None, None, True, ['a text'], 16, 1, 0)

  def test_tool_on_a_pretraining_run(self):
    work_dir = self.get_temp_dir()
    utils.write_pretraining_run(os.path.join(work_dir, 'run'), utils.VOCAB.path, seq_length=24)
    output = os.path.join(work_dir, 'score.json')
    result = subprocess.run(
        [sys.executable, os.path.join(_ROOT, 'tools', 'contextual_score.py'),
         f'--model_dir={os.path.join(work_dir, "run")}', '--input=sample:valid',
         '--max_contexts=20', '--batch_size=8', '--seq_length=24', f'--output={output}'],
        capture_output=True, text=True, timeout=300, check=False, cwd=_ROOT)
    self.assertEqual(0, result.returncode, result.stderr[-3000:])
    self.assertIn('contextual score', result.stdout)
    with open(output) as f:
      values = json.load(f)
    self.assertEqual(20, values['contexts'])
    self.assertGreater(values['token_pairs'], 100)
    for key in ('intra_context', 'inter_context'):
      self.assertBetween(values[key], -1.0, 1.0)
    self.assertAllClose(values['intra_context'] - values['inter_context'],
                        values['contextual_score'])


if __name__ == '__main__':
  tf.test.main()
