"""Fine-tuning the releases: groups of budget and seed, units per group, the report's intervals."""

import json
import os
from unittest import mock

import numpy as np
import tensorflow as tf

from teams_lab import finetune_protocols
from teams_lab import finetuning_report
from teams_lab import release_finetuning
from teams_lab import replication
from teams_lab import verdicts
from teams_tf.finetuning import glue_metrics

_DEV = 200


def _release(root, name, flops, vocab='v1'):
  path = os.path.join(root, name)
  os.makedirs(path)
  with open(os.path.join(path, 'vocab.txt'), 'w') as f:
    f.write('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'a', 'b']) + '\n')
  with open(os.path.join(path, 'release.json'), 'w') as f:
    json.dump(dict(train_flops=flops, sha256={'vocab.txt': vocab}), f)


class FakeSweep:
  """Writes a sweep result whose dev predictions are right with probability `skill[encoder]`."""

  def __init__(self, skill):
    self.skill = skill
    self.calls = []

  def __call__(self, fields):
    self.calls.append(fields)
    (task,), seed = fields['tasks'], int(fields['seeds'].rstrip(','))
    encoder = fields['output_dir'].split(os.sep)[-3]
    rng = np.random.default_rng(seed)
    labels = np.random.default_rng(0).integers(0, 2, _DEV)
    right = rng.random(_DEV) < self.skill[encoder]
    predictions = np.where(right, labels, 1 - labels)
    if task == 'stsb':
      labels = labels * 5.0
      predictions = np.where(right, labels, 5.0 - labels) + rng.normal(0, 0.1, _DEV)
    result = dict(task=task, seed=seed, headline_metric=glue_metrics.headline_metric(task),
                  metrics=glue_metrics.compute(task, predictions, labels),
                  predicted_classes=None if task == 'stsb' else len(set(predictions)),
                  dev_predictions=glue_metrics.encode_outputs(task, predictions),
                  dev_labels=glue_metrics.encode_outputs(task, labels),
                  selection=dict(step=1, epochs=[dict(step=1, value=0.5)]))
    run_dir = os.path.join(fields['output_dir'], task, f'seed_{seed}')
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, 'result.json'), 'w') as f:
      json.dump(result, f)


class ReleaseFinetuningTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.root = self.get_temp_dir()
    self.releases = os.path.join(self.root, 'encoders')
    for name, flops in (('bert_seed1', 9.0), ('teams_seed1', 8.9), ('teams_seed2', 8.95),
                        ('bert_3x_seed1', 27.0)):
      _release(self.releases, name, flops)

  def _unpack(self, path):
    model_dir = os.path.join(self.root, 'unpacked', os.path.basename(path))
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, 'checkpoint'), 'w'):
      pass
    return model_dir

  def _prepare(self, protocol='pooled', chosen=None):
    glue_dir = os.path.join(self.root, 'glue')
    for folder in ('SST-2', 'CoLA', 'STS-B'):
      os.makedirs(os.path.join(glue_dir, folder), exist_ok=True)

    def write_meta(**kwargs):
      os.makedirs(kwargs['output_dir'], exist_ok=True)
      with open(os.path.join(kwargs['output_dir'], 'meta_data.json'), 'w') as f:
        json.dump(dict(kwargs, heldout_data_size=kwargs['heldout_examples'],
                       train_label_mean=2.5, train_label_std=1.5), f)

    convert = mock.Mock(side_effect=write_meta)
    if chosen is None:
      chosen = release_finetuning.groups(self.releases)
    runs = release_finetuning.prepare(protocol, chosen, glue_dir, os.path.join(self.root, 'out'),
                                      os.path.join(self.root, 'work'), convert, self._unpack,
                                      log=lambda _: None)
    return runs, convert

  def test_releases_group_by_budget_and_seed_and_random_init_joins_the_first(self):
    groups = release_finetuning.groups(self.releases)
    self.assertEqual(['seed1', 'seed2', '3x_seed1'], [group.name for group in groups])
    # A group's budget reads back as release names spell it.
    self.assertEqual(['', '', '_3x'], [release_finetuning.group_budget(g.name) for g in groups])
    self.assertEqual((['bert', 'teams'], 9.0), (sorted(groups[0].releases), groups[0].train_flops))
    self.assertEqual(['bert', 'teams', 'random'], release_finetuning.encoders(groups[0]))
    self.assertEqual(['teams'], release_finetuning.encoders(groups[1]))
    self.assertEqual(['bert'], release_finetuning.encoders(groups[2]))
    runs, convert = self._prepare()
    self.assertEqual(os.path.join(self.root, 'out', 'pooled', '3x_seed1'), runs[2].out_dir)
    self.assertEqual((27.0, 1), (runs[2].max_train_flops, runs[2].pretraining_seed))
    self.assertEqual(os.path.join(self.root, 'work', 'glue_7_heldout1000'), runs[0].data_dir)
    self.assertEqual(1000, convert.call_args.kwargs['heldout_examples'])
    self.assertEqual(self._unpack(os.path.join(self.releases, 'teams_seed2')),
                     runs[1].run_dirs['teams'])

  def test_selection_follows_the_order_asked_and_names_a_typo(self):
    found = release_finetuning.groups(self.releases)

    def names(work):
      return [(group.name, encoders) for group, encoders in work]

    self.assertEqual([('seed1', ['bert', 'teams', 'random']), ('seed2', ['teams']),
                      ('3x_seed1', ['bert'])], names(release_finetuning.select(found, None, None)))
    # The order given, not the release order, so the deciding unit runs first; groups without
    # any asked encoder drop out.
    self.assertEqual([('seed1', ['random', 'bert']), ('3x_seed1', ['bert'])],
                     names(release_finetuning.select(found, None, ['random', 'bert'])))
    self.assertEqual([('seed2', ['teams'])],
                     names(release_finetuning.select(found, ['seed2'], ['teams'])))
    with self.assertRaisesRegex(ValueError, 'No encoder berd in the groups seed1, seed2, 3x_seed1; '
                                'they hold bert, random, teams'):
      release_finetuning.select(found, None, ['bert', 'berd'])
    with self.assertRaisesRegex(ValueError, 'No encoder bert in the groups seed2'):
      release_finetuning.select(found, ['seed2'], ['bert'])
    with self.assertRaisesRegex(ValueError, 'No group seed3 in the releases; they hold seed1'):
      release_finetuning.select(found, ['seed3'], None)
    # Only the chosen groups are unpacked and checked (in the release order).
    runs, _ = self._prepare(chosen=[group for group, _ in release_finetuning.select(
        found, ['3x_seed1', 'seed2'], None)])
    self.assertEqual(['seed2', '3x_seed1'], [os.path.basename(run.out_dir) for run in runs])
    self.assertFalse(os.path.exists(os.path.join(self.root, 'unpacked', 'bert_seed1')))

  def test_bad_release_sets_are_one_clear_error(self):
    with self.assertRaisesRegex(ValueError, "Unknown protocol 'best'; use one of cls_head"):
      self._prepare('best')
    with self.assertRaisesRegex(ValueError, 'No release in .*empty; make them with '
                                'tools/release_encoders.py'):
      release_finetuning.groups(os.path.join(self.root, 'empty'))
    _release(self.releases, 'mws_seed1', 9.0, vocab='v2')
    with self.assertRaisesRegex(ValueError, 'have 2 vocabularies'):
      self._prepare()

  def test_report_gives_intervals_gaps_and_floors(self):
    runs, _ = self._prepare()
    fake = FakeSweep({'bert': 0.9, 'teams': 0.55, 'random': 0.5})
    protocol = finetune_protocols.PROTOCOLS['pooled']
    for run, group in zip(runs[:1], release_finetuning.groups(self.releases)):
      replication.run(run, release_finetuning.encoders(group), fake, lambda: '', log=lambda _: 0)
    # Three rates for seed 1, four more seeds: per encoder and task.
    self.assertLen(fake.calls, 3 * 3 * (len(protocol.learning_rates) + protocol.seeds - 1))
    self.assertIn('This fine-tunes 21 of 84 unit(s), about 4.0 minutes each on 2 cores '
                  '(1.4 hours)',
                  release_finetuning.outlook([(runs[0], ['bert', 'teams', 'random']),
                                              (runs[1], ['teams'])]))
    out_dir = os.path.join(self.root, 'out')
    with open(os.path.join(out_dir, 'probes_cola.json'), 'w') as f:
      json.dump(dict(scores={'bert_seed1': [0.01, 0.074], 'random init': [0.05, 0.021]}), f)
    with open(os.path.join(out_dir, 'probes_stsb_cosine.json'), 'w') as f:
      json.dump(dict(scores={'bert_seed1': [0.5, 0.604]},
                     unrelated_cosine={'bert_seed1': [0.3, 0.776]}), f)
    text = finetuning_report.write_report(out_dir, 'pooled', glue_metrics.resampled_headlines,
                                          'python tools/benchmark_finetuning.py')
    with open(os.path.join(out_dir, 'pooled', 'finetuning.json')) as f:
      report = json.load(f)
    rows = {row['encoder']: row for row in report['rows']}
    bert, teams = rows['bert']['tasks']['sst2'], rows['teams']['tasks']['sst2']
    low, high = bert['interval']
    self.assertLess(low, np.mean(bert['values']))
    self.assertGreater(high, np.mean(bert['values']))
    # Accuracy over 200 examples near 0.9: a 95% interval about 2 x 1.96 x 0.021 / sqrt(5) wide.
    self.assertAllClose(2 * 1.96 * np.sqrt(0.09 / _DEV / 5), high - low, rtol=0.35)
    self.assertTrue(bert['real'])
    self.assertFalse(teams['real'])  # 0.05 above chance is within the noise of 200 examples.
    self.assertFalse(report['floors']['random_init_sst2']['met'])
    self.assertEqual(0, report['floors']['bert_cola_single_class_runs'])
    # STS-B scores flipped for about half the pairs (random init, TEAMS): R^2 below 0.
    poor = report['floors']['stsb_runs_at_r2_le_0']
    self.assertEqual(2 * protocol.seeds, poor['total'])
    self.assertEqual(0, poor['nearly_constant'])  # Flipped labels spread like the labels.
    self.assertEqual({'random', 'teams'}, {item['encoder'] for item in poor['rows']})
    self.assertRegex(text, r'\| seed1 \| BERT \| 9\d\.\d \[\d+\.\d, \d+\.\d\] \(')
    self.assertIn('random init SST-2 acc median 48.5 against the floor 78.0: not met.', text)
    self.assertIn('| cola (mean) | embeddings | layer 1 |\n|---|---:|---:|\n'
                  '| bert_seed1 | 1.0 | 7.4 |\n| random init | 5.0 | 2.1 |', text)
    # Where STS-B fine-tuning starts: the cosine probe's last layer.
    self.assertIn("| encoder | Spearman of cos(u, v) | unrelated pairs' cosine |\n|---|---:|---:|\n"
                  '| bert_seed1 | 60.4 | 77.6 |', text)

  def test_floors_tell_a_collapse_onto_the_mean_from_a_weak_fit(self):
    labels = np.random.default_rng(0).uniform(0, 5, _DEV)
    noise = np.random.default_rng(1).normal(0, 1, _DEV)
    runs = {'constant': labels.mean() + 0.01 * noise,  # R^2 just under 0: the mean, nearly.
            'weak': labels.mean() + 0.9 * noise,  # Spread but uncorrelated: R^2 far below 0.
            'good': labels + 0.3 * noise}
    results = {name: dict(dev_predictions=list(p), dev_labels=list(labels))
               for name, p in runs.items()}
    self.assertLessEqual(finetuning_report.r_squared(results['constant']), 0)
    self.assertLess(finetuning_report.r_squared(results['weak']), -0.2)
    row = dict(group='seed1', encoder='electra', tasks=dict(stsb=dict(
        seeds=3, r_squared=[finetuning_report.r_squared(r) for r in results.values()],
        relative_prediction_std=[finetuning_report.relative_prediction_std(r)
                                 for r in results.values()])))
    poor = finetuning_report.floors([row])['stsb_runs_at_r2_le_0']
    self.assertEqual((2, 1), (poor['total'], poor['nearly_constant']))
    self.assertEqual(2, poor['rows'][0]['runs'])
    self.assertAllClose(np.array([0.01, 0.9]) * noise.std() / labels.std(),
                        poor['rows'][0]['relative_prediction_std'])

  def test_a_cell_missing_seeds_is_neither_real_nor_judged(self):
    _release(self.releases, 'electra_seed1', 9.0)
    runs, _ = self._prepare()
    fake = FakeSweep({'bert': 0.9, 'electra': 0.5, 'teams': 0.5, 'random': 0.5})
    replication.run(runs[0], release_finetuning.encoders(release_finetuning.groups(
        self.releases)[0]), fake, lambda: '', log=lambda _: 0)
    out_dir = os.path.join(self.root, 'out')
    group_dir = os.path.join(out_dir, 'pooled', 'seed1')
    rate, results = finetuning_report.seed_results(
        finetune_protocols.PROTOCOLS['pooled'], group_dir, 'bert', 'sst2')
    self.assertLen(results, 5)
    # A session stopped before BERT's last SST-2 seed: 4 of 5 seeds, still 0.9 against 0.5.
    os.remove(replication.unit_path(group_dir, replication.Unit('bert', 'sst2', rate, 5)))
    text = finetuning_report.write_report(out_dir, 'pooled', glue_metrics.resampled_headlines,
                                          'python tools/benchmark_finetuning.py')
    with open(os.path.join(out_dir, 'pooled', 'finetuning.json')) as f:
      rows = {row['encoder']: row for row in json.load(f)['rows']}
    sst2, cola = rows['bert']['tasks']['sst2'], rows['bert']['tasks']['cola']
    self.assertEqual((4, False, False), (sst2['seeds'], sst2['complete'], sst2['real']))
    self.assertGreater(sst2['gap'], 0.3)
    self.assertEqual((True, True), (cola['complete'], cola['real']))
    self.assertRegex(text, r'\| seed1 \| BERT \| 90\.0 \[[^|]*, 4 of 5 seeds \|')
    self.assertRegex(text, r'\| seed1 \| BERT \| \+4\d\.\d \([^|]*\) \| \*\*\+8')  # Not bold.
    judged = verdicts.write_report(out_dir, 'pooled', os.path.join(self.root, 'no_blimp'),
                                   self.root, glue_metrics.resampled_headlines,
                                   'python tools/judge_claims.py')
    electra = next(entry for entry in judged if entry['claim']['paper'] == 'ELECTRA')
    # BERT leads on every task; its SST-2 cell, missing a seed, is the one not judged.
    self.assertEqual({'blimp': '', 'sst2': '', 'cola': 'behind (one run)',
                      'stsb': 'behind (one run)'},
                     {name: value['verdict'] for name, value in electra['instruments'].items()})


if __name__ == '__main__':
  tf.test.main()
