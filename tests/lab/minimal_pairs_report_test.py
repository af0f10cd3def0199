"""The BLiMP report over releases: units planned, gaps judged with a paired bootstrap."""

import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from teams_lab import minimal_pairs_report as report
from teams_lab import released_runs

_UIDS = ('agreement_1', 'island_1')


def _write_release(root, name, objective, seed):
  os.makedirs(os.path.join(root, name))
  with open(os.path.join(root, name, 'release.json'), 'w') as f:
    json.dump(dict(step=10, about=dict(objective=objective, seed=seed)), f)


def _result(methods):
  """A `teams-minimal-pairs` file: methods -> {uid: outcome bits}."""
  out = {}
  for method, pairs in methods.items():
    by_uid = {uid: bits.count('1') / len(bits) for uid, bits in pairs.items()}
    out[method] = dict(network=f'{method} network', pairs=pairs, paradigms=by_uid,
                       mean=float(np.mean(list(by_uid.values()))),
                       phenomena={'agreement': by_uid['agreement_1'],
                                  'island': by_uid['island_1']},
                       seconds=60.0)
  return dict(methods=out, num_paradigms=2, num_pairs=8,
              paper={'5-gram (BLiMP paper)': 0.584})


def _bits(share, n=4):
  right = round(share * n)
  return '1' * right + '0' * (n - right)


class MinimalPairsReportTest(tf.test.TestCase):

  def test_plan_scores_each_release_random_init_per_objective_seed_and_the_unigram(self):
    root = tempfile.mkdtemp()
    for name, objective, seed in (('bert_seed1', 'bert', 1), ('bert_seed2', 'bert', 2),
                                  ('bert_3x_seed1', 'bert', 1), ('coco_lm_seed1', 'coco_lm', 1)):
      _write_release(root, name, objective, seed)
    units = {unit.name: unit.flags for unit in report.plan(root, 'corpus/*.txt')}
    self.assertEqual(['bert_3x_seed1', 'bert_seed1', 'bert_seed2', 'coco_lm_seed1',
                      'bert_random_init_seed1', 'bert_random_init_seed2',
                      'coco_lm_random_init_seed1', 'unigram'], list(units))
    self.assertEqual((f'--model_dir={root}/bert_3x_seed1', '--random_init', '--seed=2'),
                     units['bert_random_init_seed2'])
    self.assertIn('--unigram_corpus=corpus/*.txt', units['unigram'])
    self.assertEqual(('coco_lm', '_3x', 2), released_runs.parse_run('coco_lm_3x_seed2'))
    with self.assertRaisesRegex(ValueError, 'not a release name'):
      released_runs.parse_run('bert_final')

  def test_outlook_times_new_units_by_every_finished_one(self):
    out_dir = tempfile.mkdtemp()
    units = [report.Unit(name, ()) for name in ('mws_seed2', 'mws_random_init_seed2')]
    self.assertIn('about 13 minutes each on 2 cores (0.4 hours', report.outlook(units, out_dir))
    # Two finished units of other releases, of 2 and 4 methods at 60 s each, and the unigram's.
    for name, methods in (('bert_seed1', ('a', 'b')), ('teams_seed1', ('a', 'b', 'c', 'd')),
                          ('unigram', ('unigram',))):
      with open(os.path.join(out_dir, f'{name}.json'), 'w') as f:
        json.dump(_result({method: {uid: '1' for uid in _UIDS} for method in methods}), f)
    with open(os.path.join(out_dir, 'minimal_pairs.json'), 'w') as f:
      json.dump(dict(rows=[]), f)
    self.assertIn('This scores 2 of 2 unit(s) (mws_seed2, mws_random_init_seed2), about 3 minutes '
                  'each on 2 cores (0.1 hours', report.outlook(units, out_dir))

  def test_paired_bootstrap_is_the_interval_of_the_gap(self):
    rng = np.random.default_rng(1)
    same = {uid: rng.random(500) < 0.6 for uid in _UIDS}
    self.assertEqual((0.0, 0.0), report.paired_bootstrap([same], [same]))
    right = {uid: np.ones(500, bool) for uid in _UIDS}
    wrong = {uid: np.zeros(500, bool) for uid in _UIDS}
    self.assertEqual((1.0, 1.0), report.paired_bootstrap([right], [wrong]))
    # Independent sides: the normal approximation, gap +- 1.96 sd of the mean over paradigms.
    a = {uid: rng.random(2000) < 0.62 for uid in _UIDS}
    b = {uid: rng.random(2000) < 0.50 for uid in _UIDS}
    diffs = [a[uid].astype(float) - b[uid] for uid in _UIDS]
    gap = np.mean([d.mean() for d in diffs])
    sd = np.sqrt(sum(d.var() / len(d) for d in diffs)) / len(_UIDS)
    low, high = report.paired_bootstrap([a], [b])
    self.assertAllClose([gap - 1.96 * sd, gap + 1.96 * sd], [low, high], atol=0.2 * 1.96 * sd)
    # Two runs on a side are averaged per pair before resampling.
    self.assertEqual((0.5, 0.5), report.paired_bootstrap([right, wrong], [wrong]))

  def test_a_gap_is_real_only_beyond_both_spreads_and_above_zero(self):
    results = {
        'bert_seed1': _result({'masked_lm': {'agreement_1': '11111111', 'island_1': '11111110'}}),
        'bert_seed2': _result({'masked_lm': {'agreement_1': '11111110', 'island_1': '11111111'}}),
        'bert_random_init_seed1': _result({'masked_lm': {'agreement_1': '11110000',
                                                         'island_1': '11110000'}}),
        'bert_random_init_seed2': _result({'masked_lm': {'agreement_1': '11100000',
                                                         'island_1': '11110000'}}),
        # Two equal runs, far above either random draw's pairs, but random init's two draws lie
        # further apart than the gap.
        'taco_seed1': _result({'masked_lm': {'agreement_1': '11111111', 'island_1': '11111110'}}),
        'taco_seed2': _result({'masked_lm': {'agreement_1': '11111111', 'island_1': '11111110'}}),
        'taco_random_init_seed1': _result({'masked_lm': {'agreement_1': '11111111',
                                                         'island_1': '11111111'}}),
        'taco_random_init_seed2': _result({'masked_lm': {'agreement_1': '00000000',
                                                         'island_1': '00000000'}}),
        'teams_seed1': _result({'rtd': {'agreement_1': '11110000', 'island_1': '11111000'}}),
        'teams_random_init_seed1': _result({'rtd': {'agreement_1': '11110000',
                                                    'island_1': '11110000'}}),
        'unigram': _result({'unigram': {'agreement_1': '11000000', 'island_1': '11100000'}}),
    }
    rows = {(row['encoder'], row['method']): row for row in report._rows(results)}
    bert = rows[('bert', 'masked_lm')]
    self.assertAllClose([15 / 16, 15 / 16], bert['runs'])
    self.assertAllClose(15 / 16 - (0.5 + 7 / 16) / 2, bert['gap'])
    self.assertEqual((0.0, True), (bert['spread'], bert['real']))
    self.assertAllClose(1 / 16, bert['random_spread'])
    taco = rows[('taco', 'masked_lm')]
    self.assertAllClose([0, 1], [taco['spread'], taco['random_spread']])
    self.assertAllClose(15 / 16 - 1 / 2, taco['gap'])
    self.assertGreater(taco['interval'][0], 0.2)
    self.assertFalse(taco['real'])  # Beyond the run spread and the sentences' interval: not enough.
    teams = rows[('teams', 'rtd')]
    self.assertIsNone(teams['spread'])  # One pretraining run: no spread, no verdict.
    self.assertFalse(teams['real'])
    text = report.markdown(results, 'python tools/benchmark_minimal_pairs.py')
    self.assertIn(
        '| bert | masked_lm | masked_lm network | 93.8 / 93.8 | 50.0 / 43.8 | +46.9', text)
    self.assertIn('| 0.0 | 6.2 | yes |', text)
    self.assertIn('| 0.0 | 100.0 | no |', text)
    self.assertIn('| teams | rtd | rtd network | 56.2 | 50.0 | +6.2', text)
    self.assertIn('| one run | one draw | — |', text)
    self.assertIn('| unigram network | 31.2 |', text)
    self.assertIn('| 5-gram (BLiMP paper) | 58.4 |', text)
    self.assertIn('| bert | masked_lm | 93.8 | 93.8 |', text)  # Per phenomenon.

  def test_a_failed_unit_keeps_its_log_and_writes_no_results(self):
    out_dir = tempfile.mkdtemp()
    unit = report.Unit('bert_seed1', ('--model_dir=/nonexistent/bert_seed1',))
    lines = []
    self.assertIsNone(report.run_unit(unit, '/nonexistent/blimp', out_dir, log=lines.append))
    self.assertFalse(os.path.exists(report.result_path(out_dir, unit)))
    with open(os.path.join(out_dir, 'bert_seed1.log')) as f:
      self.assertIn('error:', f.read())
    self.assertIn('see', lines[-1])


if __name__ == '__main__':
  tf.test.main()
