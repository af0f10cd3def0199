"""The papers' claims judged: per-run outcomes, verdicts over pretraining runs, the sentences."""

import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from teams_lab import verdicts
from teams_tf.finetuning import glue_metrics
from tests.lab import minimal_pairs_report_test as blimp_units

_TASKS = ('sst2', 'cola', 'stsb')


def _cell(mean, spread=0.01, width=0.02, seed=0):
  """A fine-tuning cell whose bootstrap draws sit around `mean`, about `width` wide (95%)."""
  draws = mean + np.random.default_rng(seed).normal(0, width / 3.92, 1000)
  return dict(mean=mean, spread=spread, seeds=5, draws=draws)


class VerdictsTest(tf.test.TestCase):

  def test_one_comparison_is_decided_by_its_interval_and_both_seed_spreads(self):
    self.assertEqual(verdicts.AHEAD, verdicts.outcome(0.03, (0.01, 0.05), spread=0.02))
    self.assertEqual(verdicts.LEVEL, verdicts.outcome(0.03, (0.01, 0.05), spread=0.04))
    self.assertEqual(verdicts.LEVEL, verdicts.outcome(0.03, (-0.01, 0.07)))
    self.assertEqual(verdicts.BEHIND, verdicts.outcome(-0.03, (-0.05, -0.01), spread=0.02))

  def test_a_claim_holds_only_where_every_pretraining_run_agrees(self):
    cells = {}
    for group, seed in (('seed1', 1), ('seed2', 2)):
      cells[(group, 'bert', 'sst2')] = _cell(0.80, seed=seed)
      cells[(group, 'electra', 'sst2')] = _cell(0.85, seed=seed + 10)  # Ahead on both runs.
      cells[(group, 'bert', 'stsb')] = _cell(0.70, seed=seed)
      cells[(group, 'electra', 'stsb')] = _cell(0.60, seed=seed + 10)  # Behind on both.
      cells[(group, 'bert', 'cola')] = _cell(0.10, seed=seed)
    cells[('seed1', 'electra', 'cola')] = _cell(0.20, seed=11)  # Ahead on one run only,
    cells[('seed2', 'electra', 'cola')] = _cell(0.10, seed=12)  # level on the other.
    # Within the seed spread: level, though its interval is clear of 0.
    cells[('seed1', 'teams', 'sst2')] = _cell(0.86, spread=0.03, seed=20)
    glue = verdicts.glue_comparisons(cells)
    electra = glue[('', 'seed1', 'electra', 'bert', 'sst2')]
    self.assertAllClose(0.05, electra['gap'])
    self.assertAllClose(np.percentile(cells[('seed1', 'electra', 'sst2')]['draws'] -
                                      cells[('seed1', 'bert', 'sst2')]['draws'], [2.5, 97.5]),
                        electra['interval'])
    self.assertEqual(verdicts.LEVEL, glue[('', 'seed1', 'teams', 'electra', 'sst2')]['outcome'])

    judged = {(entry['claim']['paper'], entry['claim']['worse']): entry
              for entry in verdicts.judge({}, glue, _TASKS)}
    electra = judged[('ELECTRA', 'bert')]
    self.assertEqual(
        {'blimp': '', 'sst2': 'holds', 'cola': 'not seen', 'stsb': 'reversed'},
        {name: value['verdict'] for name, value in electra['instruments'].items()})
    self.assertEqual(
        'ELECTRA: ELECTRA > BERT (TEAMS Table 1, ELECTRA over BERT at each size), base budget: '
        'holds on SST-2; reversed on STS-B; not seen on CoLA; not measured yet on BLiMP.',
        electra['sentence'])
    self.assertEqual(
        'TEAMS: TEAMS > ELECTRA (TEAMS Table 1), base budget: level (one run) on SST-2; '
        'a second pretraining run decides; not measured yet on BLiMP, CoLA, STS-B.',
        judged[('TEAMS', 'electra')]['sentence'])
    self.assertEqual(
        'TACO: TACO > BERT (TACO Table 1, BERT-small), base budget: not measured yet on BLiMP, '
        'SST-2, CoLA, STS-B.', judged[('TACO', 'bert')]['sentence'])

  def test_blimp_compares_the_kept_encoders_own_scores(self):
    bits = blimp_units._bits
    # ELECTRA's generator (masked_lm) is not what users keep: its RTD head scores the encoder.
    electra = blimp_units._result({'masked_lm': {'agreement_1': bits(1.0, 40),
                                                 'island_1': bits(1.0, 40)},
                                   'rtd': {'agreement_1': bits(0.9, 40),
                                           'island_1': bits(0.9, 40)}})
    electra['methods']['masked_lm']['network'] = 'generator and MLM head'
    electra['methods']['rtd']['network'] = 'discriminator (kept encoder) and RTD head'
    bert = blimp_units._result({'masked_lm_word_l2r': {'agreement_1': bits(0.5, 40),
                                                       'island_1': bits(0.5, 40)}})
    bert['methods']['masked_lm_word_l2r']['network'] = 'kept encoder and MLM head'
    results = {'electra_seed1': electra, 'bert_seed1': bert, 'unigram': bert,
               'bert_random_init_seed1': bert}
    blimp = verdicts.blimp_comparisons(results)
    self.assertEqual([('', 'seed1', 'electra', 'bert')], list(blimp))
    comparison = blimp[('', 'seed1', 'electra', 'bert')]
    self.assertEqual(['rtd', 'masked_lm_word_l2r'], comparison['methods'])
    self.assertAllClose(0.4, comparison['gap'])
    self.assertEqual(verdicts.AHEAD, comparison['outcome'])

    out_dir = tempfile.mkdtemp()
    minimal_pairs_dir = os.path.join(out_dir, 'minimal_pairs')
    os.makedirs(minimal_pairs_dir)
    for name, result in results.items():
      with open(os.path.join(minimal_pairs_dir, f'{name}.json'), 'w') as f:
        json.dump(result, f)
    verdicts.write_report(os.path.join(out_dir, 'finetuning'), 'pooled', minimal_pairs_dir,
                          out_dir, glue_metrics.resampled_headlines, 'python tools/judge_claims.py')
    with open(os.path.join(out_dir, 'verdicts.md')) as f:
      text = f.read()
    self.assertIn('- ELECTRA: ELECTRA > BERT (TEAMS Table 1, ELECTRA over BERT at each size), '
                  'base budget: ahead (one run) on BLiMP; a second pretraining run decides; not '
                  'measured yet on SST-2, CoLA, STS-B.', text)
    self.assertIn('| ELECTRA > BERT | base | seed1 | **+40.0 (', text)


if __name__ == '__main__':
  tf.test.main()
