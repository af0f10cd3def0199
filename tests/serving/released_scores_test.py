"""The committed releases rescore their committed BLiMP outcomes, from any clone.

Every number of `benchmarks/minimal_pairs` comes from a release in `benchmarks/encoders`; this
rescores the first pairs of each paradigm with every method of one release per objective and
compares them pair by pair, so scoring that drifted from what was measured fails here rather than
in a report. The other releases of an objective (seeds, longer runs) go through the same code; that
their files are still the ones measured is checked against their release.json hashes.
"""

import json
import os

from absl.testing import parameterized
import tensorflow as tf

from teams_tf.serving import loaders
from teams_tf.serving import minimal_pairs
from teams_tf.training import releases
from teams_tf.utils import file_hashes

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_RELEASES = os.path.join(_ROOT, 'benchmarks', 'encoders')
_RESULTS = os.path.join(_ROOT, 'benchmarks', 'minimal_pairs')
# The shared data sit beside the repository (../shared/data), on every developer machine and in CI.
_BLIMP = os.path.join(_ROOT, '..', 'shared', 'data', 'blimp')
# 3 pairs of each of the 36 paradigms: 108 pairs a method, seconds a release.
_PAIRS = 3
# Pairs whose two scores are within float rounding of each other may flip on another CPU; weights
# that differ from the measured ones flip about half.
_MAX_FLIPS = 2


def _releases():
  return sorted(name for name in os.listdir(_RELEASES)
                if releases.is_release(os.path.join(_RELEASES, name)))


def _scored():
  return [name for name in _releases() if os.path.exists(os.path.join(_RESULTS, f'{name}.json'))]


def _one_per_objective():
  """The first scored release (by name) of each objective: a few seconds of loading each."""
  first = {}
  for name in _scored():
    objective = releases.read_release(os.path.join(_RELEASES, name))['about']['objective']
    first.setdefault(objective, name)
  return sorted(first.values())


class ReleasedScoresTest(tf.test.TestCase, parameterized.TestCase):

  def setUp(self):
    super().setUp()
    if not os.path.isdir(_BLIMP):
      self.skipTest(f'the shared BLiMP files {_BLIMP} are not on this machine')
    os.environ['TEAMS_TF_CACHE'] = self.get_temp_dir()

  def test_every_release_has_committed_scores(self):
    self.assertEqual(_releases(), _scored())

  def test_every_release_holds_the_files_it_was_measured_with(self):
    for name in _releases():
      release_dir = os.path.join(_RELEASES, name)
      for file_name, expected in releases.read_release(release_dir)['sha256'].items():
        self.assertEqual(file_hashes.sha256(os.path.join(release_dir, file_name)), expected,
                         f'{name}/{file_name}')

  @parameterized.named_parameters((name, name) for name in _one_per_objective())
  def test_release_rescores_its_committed_outcomes(self, name):
    with open(os.path.join(_RESULTS, f'{name}.json')) as f:
      committed = json.load(f)['methods']
    paradigms = minimal_pairs.read_paradigms(_BLIMP, _PAIRS)
    scorers, vocab, lower_case, seq_length = loaders.load_sentence_scorers(
        releases.resolve_model_dir(os.path.join(_RELEASES, name)), sorted(committed))
    for method, scorer in scorers.items():
      outcomes = minimal_pairs.pair_outcomes(
          minimal_pairs.text_scorer(scorer, vocab, lower_case, seq_length), paradigms,
          log=lambda line: None)
      flips = [f'{uid} pair {i}' for uid, bits in minimal_pairs.outcome_bits(outcomes).items()
               for i, (now, then) in enumerate(zip(bits, committed[method]['pairs'][uid]))
               if now != then]
      self.assertLessEqual(len(flips), _MAX_FLIPS,
                           f'{name} {method}: {len(flips)} of {len(paradigms) * _PAIRS} pairs '
                           f'differ from benchmarks/minimal_pairs/{name}.json: {flips[:5]}')


if __name__ == '__main__':
  tf.test.main()
