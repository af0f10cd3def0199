"""The replication's orchestration and report, on fake pretraining and fine-tuning."""

import dataclasses
import json
import os
import re
from unittest import mock

import tensorflow as tf

from official.core import exp_factory

from teams_lab import finetune_protocols
from teams_lab import learning
from teams_lab import learning_data
from teams_lab import replication
from teams_lab import replication_report
from teams_lab import replication_summary
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import embedded
from teams_tf.finetuning import glue
from tests.finetuning import glue_test
from tests.lab import learning_test

_HEADLINES = {'sst2': 'accuracy', 'cola': 'matthews_corrcoef', 'stsb': 'spearman'}


def _sweep_result(task, seed, value):
  """A result.json as `sweep.run_one` writes it, reduced to what the replication reads."""
  return dict(task=task, seed=seed, headline_metric=_HEADLINES[task],
              metrics={_HEADLINES[task]: value})


def _commit(out_dir, encoder, task, rate, seed, value, settings=None):
  path = replication.unit_path(out_dir, replication.Unit(encoder, task, rate, seed))
  os.makedirs(os.path.dirname(path), exist_ok=True)
  result = _sweep_result(task, seed, value)
  if settings:
    result['settings'] = settings
  with open(path, 'w') as f:
    json.dump(result, f)


def _commit_seeds(out_dir, encoder, values, tasks=('sst2', 'cola', 'stsb'), settings=None):
  """Seeds 1..N at 1e-4 with `values`, and a worse seed 1 at 3e-4, on every task."""
  for task in tasks:
    _commit(out_dir, encoder, task, 3e-4, 1, values[0] - 0.3, settings)
    for seed, value in enumerate(values, 1):
      _commit(out_dir, encoder, task, 1e-4, seed, value, settings)


class FakeSweep:
  """Stands in for `sweep.prepare` + `sweep.run`: writes a result whose score follows the rate.

  Per task, `best` rate scores 0.1 more than the others (stsb: a tie, so the earlier rate wins).
  """
  best = {'sst2': 3e-4, 'cola': 1e-4, 'stsb': None}

  def __init__(self):
    self.calls = []

  def __call__(self, fields):
    self.calls.append(fields)
    (task,), seed = fields['tasks'], int(fields['seeds'].rstrip(','))
    rate = float(fields['params_override'].split('=')[1])
    value = 0.5 + (0.1 if rate == self.best[task] else 0.0) + 0.01 * seed
    run_dir = os.path.join(fields['output_dir'], task, f'seed_{seed}')
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, 'result.json'), 'w') as f:
      json.dump(_sweep_result(task, seed, value), f)


class ReplicationTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    root = self.get_temp_dir()
    self.out_dir, self.work_dir = os.path.join(root, 'out'), os.path.join(root, 'work')
    self.run_dirs = {}
    for objective in ('teams', 'bert'):
      self.run_dirs[objective] = os.path.join(root, 'runs', objective)
      os.makedirs(self.run_dirs[objective])
      with open(os.path.join(self.run_dirs[objective], 'checkpoint'), 'w'):
        pass
    self.protocol = finetune_protocols.FineTuneProtocol(learning_rates=(1e-4, 3e-4))
    self.runs = replication.Replication(self.protocol, self.out_dir, self.work_dir,
                                        os.path.join(root, 'glue'), self.run_dirs, 9e13)

  def _run(self, encoders, fine_tune):
    lines, reports = [], []
    clock = iter(range(0, 10_000, 60))
    replication.run(self.runs, encoders, fine_tune, lambda: reports.append(1) or 'TABLE',
                    log=lines.append, clock=lambda: next(clock))
    return lines, reports

  def test_default_setup_is_the_learning_benchmarks(self):
    root = self.get_temp_dir()
    vocab = os.path.join(root, 'vocab.txt')
    with open(vocab, 'w') as f:
      f.write('\n'.join(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + list('abcdefg')) + '\n')
    with mock.patch.object(learning_data, 'prepare_data', return_value=(vocab, 'tr', 'va')) as data:
      setup, flops = learning.default_setup('corpus', os.path.join(root, 'w'),
                                            os.path.join(root, 'o'), 100, 30, 7)
    self.assertEqual(('corpus', os.path.join(root, 'w'), 100, 64), data.call_args.args)
    self.assertEqual(learning.step_flops(12), flops)
    self.assertEqual(learning.Setup(
        train_input='tr', validation_input='va', input_format='tfrecord', vocab_file=vocab,
        vocab_size=12, max_train_flops=30 * flops['bert'], validation_interval=7,
        validation_steps=exp_factory.get_exp_config('bert_mini').trainer.validation_steps,
        work_dir=os.path.join(root, 'w'), out_dir=os.path.join(root, 'o')), setup)

  def test_every_encoder_is_a_named_mini_run(self):
    # tools/replicate.py --encoders=<variant> needs its pretraining run and its report name.
    runs = learning.mini_runs()
    for encoder in replication.ENCODERS:
      self.assertIn(encoder, replication.ENCODER_NAMES)
      if encoder != replication.RANDOM:
        self.assertIn(encoder, runs)
    self.assertEqual('teams_mini_no_tie', runs['teams_no_tie'])

  def test_every_objective_pretrains_through_the_learning_benchmark_at_one_budget(self):
    setup = learning.Setup('t', 'v', 'tfrecord', 'vocab.txt', 100, 9e13, 10, 2, self.work_dir,
                           self.out_dir)
    flops = {objective: float(i + 1) for i, objective in enumerate(learning.OBJECTIVES)}
    with mock.patch.object(learning, 'run_objective',
                           side_effect=lambda objective, *_, **__: (
                               None if objective == 'taco' else {})) as run_objective:
      run_dirs = replication.pretrain(setup, flops, ['teams', 'taco', 'random'], log=print)
    # The random-init encoder needs BERT's run for its shape; a failed run gives no run dir.
    self.assertEqual([('teams', setup, flops['teams']), ('taco', setup, flops['taco']),
                      ('bert', setup, flops['bert'])],
                     [call.args for call in run_objective.call_args_list])
    self.assertEqual({'teams': learning.run_dir(setup, 'teams'),
                      'bert': learning.run_dir(setup, 'bert')}, run_dirs)

  def test_a_run_whose_directory_lost_its_final_checkpoint_is_not_fine_tuned(self):
    setup = learning.Setup('t', 'v', 'tfrecord', 'vocab.txt', 100, 9e13, 10, 2, self.work_dir,
                           self.out_dir)
    for objective, step in (('teams', 300), ('bert', 100)):
      learning_test.save_checkpoint(learning.run_dir(setup, objective), step)
    lines = []
    # Both results ended at step 300; BERT's directory holds a rerun cut off at step 100.
    with mock.patch.object(learning, 'run_objective',
                           return_value=dict(curve=[dict(step=300)])):
      run_dirs = replication.pretrain(setup, {'teams': 1.0, 'bert': 1.0}, ['teams', 'random'],
                                      log=lines.append)
    self.assertEqual({'teams': learning.run_dir(setup, 'teams')}, run_dirs)
    self.assertRegex('\n'.join(lines), 'bert: .* holds a checkpoint at step 100, but .* ended '
                     'at step 300')

  def test_seed_one_tries_the_grid_and_later_seeds_run_at_its_best_rate(self):
    fake = FakeSweep()
    lines, reports = self._run(['teams', 'random'], fake)
    units = [(f['output_dir'].split(os.sep)[-3], f['tasks'][0], f['params_override'],
              f['seeds']) for f in fake.calls]
    field = finetune_protocols.LEARNING_RATE_FIELD
    expected = []
    for encoder in ('teams', 'random'):  # One encoder's cells complete before the next starts.
      expected += [(encoder, task, f'{field}={rate}', '1,') for task in ('sst2', 'cola', 'stsb')
                   for rate in (1e-4, 3e-4)]
      expected += [(encoder, task, f'{field}={rate}', f'{seed},')
                   for task, rate in (('sst2', 3e-4), ('cola', 1e-4), ('stsb', 1e-4))
                   for seed in (2, 3)]
    self.assertEqual(expected, units)
    teams, random = fake.calls[0], fake.calls[12]
    self.assertEqual((self.run_dirs['teams'], None), (teams['init_checkpoint'],
                                                      teams['encoder_from']))
    self.assertEqual(('', self.run_dirs['bert']), (random['init_checkpoint'],
                                                   random['encoder_from']))
    self.assertEqual((3, 'mini'), (teams['epochs'], teams['size']))
    # The budget names the directory: a sweep resumes what it finds there.
    self.assertEqual(
        os.path.join(self.work_dir, 'replication_9e+13flops', 'teams', 'sst2', 'lr_1e-4'),
        teams['output_dir'])
    committed = replication.read_unit(self.out_dir, replication.Unit('random', 'sst2', 3e-4, 3))
    self.assertEqual((0.63, 3e-4, 'random', None),
                     (committed['metrics']['accuracy'], committed['learning_rate'],
                      committed['encoder'], committed['settings']['pretraining_flops']))
    self.assertIn('[13/24] random sst2 lr 1e-4 seed 1', lines)
    self.assertIn('done teams sst2 lr 1e-4 seed 1: dev accuracy 0.5100 in 1.0 min; 23 unit(s) '
                  'left, ETA 0.4 h', lines)
    self.assertLen(reports, 24)
    self.assertEqual(24, lines.count('TABLE'))

  def test_committed_units_are_skipped_even_without_the_work_dir(self):
    self._run(['teams'], FakeSweep())
    tf.io.gfile.rmtree(self.work_dir)
    os.remove(replication.unit_path(self.out_dir, replication.Unit('teams', 'cola', 1e-4, 3)))
    fake = FakeSweep()
    lines, _ = self._run(['teams'], fake)
    self.assertEqual([('cola', '3,')], [(f['tasks'][0], f['seeds']) for f in fake.calls])
    self.assertEqual('11 of 12 fine-tuning unit(s) done, 1 to run', lines[0])
    replication.check_committed(self.runs, ['teams'])
    with self.assertRaisesRegex(ValueError, 'sst2_lr1e-4_seed1.json was run with other settings'):
      replication.check_committed(dataclasses.replace(
          self.runs, protocol=dataclasses.replace(self.protocol, epochs=5)), ['teams'])
    # Fine-tuning another pretraining seed's encoder is another unit.
    with self.assertRaisesRegex(ValueError, 'was run with other settings'):
      replication.check_committed(dataclasses.replace(self.runs, pretraining_seed=2), ['teams'])
    # A result committed before pretraining seeds existed is an unseeded run's.
    path = replication.unit_path(self.out_dir, replication.Unit('teams', 'sst2', 1e-4, 1))
    with open(path) as f:
      result = json.load(f)
    del result['settings']['pretraining_seed']
    with open(path, 'w') as f:
      json.dump(result, f)
    replication.check_committed(self.runs, ['teams'])

  def test_another_pretraining_seed_sweeps_in_its_own_directory(self):
    fake = FakeSweep()
    self.runs = dataclasses.replace(self.runs, pretraining_seed=2)
    self._run(['teams'], fake)
    self.assertEqual(
        os.path.join(self.work_dir, 'replication_seed2_9e+13flops', 'teams', 'sst2', 'lr_1e-4'),
        fake.calls[0]['output_dir'])
    committed = replication.read_unit(self.out_dir, replication.Unit('teams', 'sst2', 1e-4, 1))
    self.assertEqual((9e13, 2), (committed['settings']['pretraining_flops'],
                                 committed['settings']['pretraining_seed']))

  def test_an_encoder_without_a_checkpoint_waits(self):
    os.remove(os.path.join(self.run_dirs['bert'], 'checkpoint'))
    fake = FakeSweep()
    lines, _ = self._run(['teams', 'random'], fake)
    self.assertEqual({'teams'}, {f['output_dir'].split(os.sep)[-3] for f in fake.calls})
    self.assertEqual('0 of 24 fine-tuning unit(s) done, 12 to run', lines[0])
    self.assertIn('random: waits for a checkpoint of the bert pretraining run', '\n'.join(lines))

  def test_outlook_says_what_a_run_will_do_and_how_long_before_it_starts(self):
    learning_dir = os.path.join(self.get_temp_dir(), 'learning')
    os.makedirs(learning_dir)
    with open(os.path.join(learning_dir, 'bert.json'), 'w') as f:
      json.dump({}, f)
    # BERT's 3 tasks x (2 rates + 2 more seeds) = 12 units, 4 of them done in 2 minutes each.
    for task in ('sst2', 'cola'):
      for rate in (1e-4, 3e-4):
        path = replication.unit_path(self.out_dir, replication.Unit('bert', task, rate, 1))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
          json.dump(dict(_sweep_result(task, 1, 0.5), total_seconds=120.0), f)
    text = replication.outlook(self.protocol, self.out_dir, learning_dir, self.work_dir,
                               ['bert', 'teams', 'random'])
    self.assertIn(f'builds the corpus vocabulary and records in {self.work_dir}', text)
    self.assertIn('pretrains 1 encoder(s) (teams; 40 to 55 minutes each)', text)
    self.assertIn('fine-tunes up to 32 of 36 unit(s) (about 2.0 minutes each', text)
    # 15 + 40 + 32 x 2 minutes, to 15 + 55 + 64.
    self.assertIn('at most about 2.0 to 2.2 hours on 2 cores', text)
    self.assertIn('pass --report_only', text)

  def test_learning_rate_choice(self):
    def choice():
      return replication.choose_learning_rate(self.protocol, self.out_dir, 'teams', 'stsb')

    unit = replication.Unit('teams', 'stsb', 3e-4, 1)
    self.assertIsNone(choice())
    _commit(self.out_dir, 'teams', 'stsb', 3e-4, 1, 0.2)
    self.assertIsNone(choice())  # Seed 1 has not tried the whole grid yet.
    _commit(self.out_dir, 'teams', 'stsb', 1e-4, 1, None)  # Constant predictions: counts as 0.
    self.assertEqual(3e-4, choice())
    _commit(self.out_dir, 'teams', 'stsb', 1e-4, 1, 0.2)  # A tie: the earlier rate.
    self.assertEqual(1e-4, choice())
    self.assertEqual(os.path.join('x', 'teams', 'stsb_lr3e-4_seed1.json'),
                     replication.unit_path('x', unit))
    self.assertEqual('2.5e-5', finetune_protocols.format_rate(2.5e-5))

  def test_report_medians_flags_and_paper_sentences(self):
    out = self.out_dir
    _commit_seeds(out, 'random', [0.50, 0.52, 0.54])
    _commit_seeds(out, 'teams', [0.72, 0.70, 0.71])
    _commit_seeds(out, 'electra', [0.60, 0.62, 0.64])
    _commit_seeds(out, 'bert', [0.51, 0.55, 0.53])  # Within random's spread.
    _commit_seeds(out, 'script', [0.58, 0.61, 0.63])  # Below ELECTRA, within the spread.
    _commit_seeds(out, 'taco', [0.9, 0.8], tasks=('sst2',))
    summary = replication_summary.summarize(self.protocol, out)
    teams = summary['teams']['tasks']['cola']
    self.assertEqual((1e-4, 0.71, 0.70, 0.72), (teams['learning_rate'], teams['median'],
                                                teams['min'], teams['max']))
    self.assertEqual({'sst2': True, 'cola': True, 'stsb': True}, summary['teams']['beats_random'])
    self.assertEqual({'sst2': False, 'cola': False, 'stsb': False},
                     summary['bert']['beats_random'])
    self.assertEqual({'sst2': None, 'cola': None, 'stsb': None}, summary['taco']['beats_random'])
    self.assertEqual((['bert'], ['taco']),
                     tuple(sorted(e) for e in replication_summary.not_beating_random(
                         {k: v for k, v in summary.items()
                          if k in ('random', 'teams', 'electra', 'bert', 'script', 'taco')})))

    sentences = [replication_report.paper_sentence(*claim, summary)
                 for claim in replication_report.PAPER_CLAIMS]
    self.assertEqual(
        'The TEAMS paper reports TEAMS > ELECTRA > BERT on GLUE; on the average of the task '
        'medians at this scale (TEAMS - ELECTRA +9.0 points (seed spread 4.0), ELECTRA - BERT '
        '+9.0 points (seed spread 4.0)) the ordering reproduces; every gap exceeds the seed '
        'spread.', sentences[0])
    self.assertStartsWith(sentences[1], 'The COCO-LM paper reports COCO-LM > ELECTRA and '
                          'COCO-LM > BERT on GLUE: not enough runs yet (COCO-LM lacks')
    self.assertIn('not enough runs yet (TACO lacks a task', sentences[2])
    self.assertEqual(
        'The SCRIPT paper reports SCRIPT > ELECTRA on GLUE; on the average of the task medians '
        'at this scale (SCRIPT - ELECTRA -1.0 points (seed spread 5.0)) the ordering does not '
        'reproduce; SCRIPT - ELECTRA is within the seed spread, so more seeds or compute would '
        'be needed to tell.', sentences[3])
    self.assertEqual('The TEAMS paper reports TEAMS > No Tie (Table 4) on GLUE: not enough runs '
                     'yet (TEAMS (No Tie, Table 4) lacks a task or seed).', sentences[4])
    text = replication_report.markdown(self.protocol, summary, {}, '# head')
    self.assertIn('| TEAMS | 71.0 (70.0–72.0) | 1e-4 | 71.0 (70.0–72.0) | 1e-4 | '
                  '71.0 (70.0–72.0) | 1e-4 | 71.0 | yes / yes / yes | — | — | — |', text)
    self.assertIn('| TACO | 85.0 (80.0–90.0), 2/3 seeds | 1e-4 | not run yet | ? | not run yet | '
                  '? | — | — / — / — |', text)
    self.assertIn('| MWS-only | not run yet | ? |', text)
    self.assertIn('| random init | 52.0 (50.0–54.0) | 1e-4 |', text)
    self.assertIn("Rate chosen at the grid's largest (3e-4), so a larger one might score better: "
                  'none.', text)
    _commit(out, 'electra', 'cola', 3e-4, 1, 0.9)
    self.assertIn('might score better: ELECTRA CoLA.', replication_report.markdown(
        self.protocol, replication_summary.summarize(self.protocol, out), {}, '# head'))
    undecided = ['MWS-only', 'COCO-LM', 'TACO'] + [replication.ENCODER_NAMES[variant]
                                                   for variant in replication.VARIANTS]
    self.assertIn('on at least 2 of the 3 tasks: BERT (not decided yet: '
                  f'{", ".join(undecided)}). Why, measured with linear probes', text)
    # An ordering that holds on the medians but within the spread is not called reproduced.
    summary['teams']['average']['median'] = summary['electra']['average']['median'] + 0.01
    self.assertIn('the ordering holds on the medians, but TEAMS - ELECTRA is within the seed '
                  'spread, so more seeds or compute would be needed to tell.',
                  replication_report.paper_sentence(*replication_report.PAPER_CLAIMS[0],
                                                    summary))

  def test_other_pretraining_runs_average_into_the_gap_and_widen_its_spread(self):
    out, other = self.out_dir, os.path.join(self.get_temp_dir(), 'replication_seed2')
    _commit_seeds(out, 'random', [0.50, 0.52, 0.54])
    _commit_seeds(out, 'teams', [0.72, 0.70, 0.71])
    _commit_seeds(out, 'electra', [0.60, 0.62, 0.64])
    _commit_seeds(out, 'bert', [0.51, 0.55, 0.53])
    # Seed 2 averages 65.0 against the first run's 53.0, and beats random init where the first
    # run did not.
    _commit_seeds(other, 'bert', [0.60, 0.61, 0.62], tasks=('sst2', 'cola'),
                  settings=dict(pretraining_seed=2))
    _commit_seeds(other, 'bert', [0.72, 0.73, 0.74], tasks=('stsb',),
                  settings=dict(pretraining_seed=2))
    _commit_seeds(other, 'teams', [0.9], tasks=('sst2',))  # Incomplete: not a run yet.
    alone = replication_summary.summarize(self.protocol, out)
    self.assertNotIn('pretraining_range', alone['bert']['average'])
    self.assertNotIn('## Pretraining runs',
                     replication_report.markdown(self.protocol, alone, {}, '# head'))

    summary = replication_summary.summarize(self.protocol, out, [other])
    self.assertAlmostEqual(0.12, summary['bert']['average']['pretraining_range'])
    self.assertAlmostEqual(0.59, summary['bert']['average']['runs_mean'])
    self.assertLen(summary['teams']['pretraining_runs'], 1)
    self.assertEqual(
        'The TEAMS paper reports TEAMS > ELECTRA > BERT on GLUE; on the average of the task '
        'medians at this scale (TEAMS - ELECTRA +9.0 points (seed spread 4.0), ELECTRA - BERT '
        '+3.0 points (means over pretraining runs: BERT 2; seed spread 12.0 across '
        'pretraining runs)) the ordering holds on the medians, but ELECTRA - BERT is within the '
        'seed spread, so more seeds or compute would be needed to tell.',
        replication_report.paper_sentence(*replication_report.PAPER_CLAIMS[0], summary))
    text = replication_report.markdown(self.protocol, summary, {}, '# head')
    self.assertIn('| encoder | pretraining seed | sweep | SST-2 | CoLA | STS-B | average | '
                  'beats random init (SST-2 / CoLA / STS-B) |\n'
                  '|---|---|---|---|---|---|---|---|\n'
                  '| BERT | unseeded | out | 53.0 | 53.0 | 53.0 | 53.0 | no / no / no |\n'
                  '| BERT | 2 | replication_seed2 | 61.0 | 61.0 | 73.0 | 65.0 | '
                  'yes / yes / yes |\n',
                  text)
    self.assertNotIn('| TEAMS | unseeded', text)

  def test_an_encoder_fails_the_rule_when_any_of_its_pretraining_runs_does(self):
    out, other = self.out_dir, os.path.join(self.get_temp_dir(), 'replication_seed2')
    _commit_seeds(out, 'random', [0.50, 0.52, 0.54])
    for encoder, first, second in (('teams', [0.72, 0.70, 0.71], [0.70, 0.71, 0.69]),
                                   ('script', [0.72, 0.70, 0.71], [0.51, 0.55, 0.53]),
                                   ('bert', [0.51, 0.55, 0.53], [0.72, 0.70, 0.71])):
      _commit_seeds(out, encoder, first)
      _commit_seeds(other, encoder, second, settings=dict(pretraining_seed=2))
    summary = replication_summary.summarize(self.protocol, out, [other])
    self.assertEqual({'sst2': True, 'cola': True, 'stsb': True},
                     summary['script']['beats_random'])  # The first run alone passes.
    failing, _ = replication_summary.not_beating_random(summary)
    self.assertEqual(['bert', 'script'], sorted(failing))
    self.assertIn('tasks: BERT (1 of 2 pretraining runs), SCRIPT (1 of 2 pretraining runs) (not '
                  'decided yet:', replication_report.markdown(self.protocol, summary, {}, '# head'))

  def test_a_run_still_being_fine_tuned_counts_once_it_already_fails(self):
    out, other = self.out_dir, os.path.join(self.get_temp_dir(), 'replication_seed2')
    _commit_seeds(out, 'random', [0.50, 0.52, 0.54])
    # This sweep's run fails SST-2 and CoLA before STS-B is fine-tuned; two other runs pass.
    _commit_seeds(out, 'script', [0.51, 0.55, 0.53], tasks=('sst2', 'cola'))
    for seed in (2, 3):
      _commit_seeds(other + str(seed), 'script', [0.72, 0.70, 0.71],
                    settings=dict(pretraining_seed=seed))
    summary = replication_summary.summarize(self.protocol, out, [other + '2', other + '3'])
    self.assertEqual((1, 3), replication_summary.failing_runs(summary['script']))
    self.assertEqual(['script'], replication_summary.not_beating_random(summary)[0])
    self.assertIn('SCRIPT (1 of 3 pretraining runs)',
                  replication_report.markdown(self.protocol, summary, {}, '# head'))

  def test_a_sweep_of_another_pretraining_run_compares_with_the_main_random_init(self):
    main, other = self.out_dir, os.path.join(self.get_temp_dir(), 'replication_seed2')
    _commit_seeds(main, 'random', [0.50, 0.52, 0.54])
    _commit_seeds(other, 'bert', [0.61, 0.62, 0.63], settings=dict(pretraining_seed=2))
    alone = replication_summary.summarize(self.protocol, other)
    self.assertEqual({'sst2': None, 'cola': None, 'stsb': None}, alone['bert']['beats_random'])
    learning_dir = os.path.join(self.get_temp_dir(), 'learning_seed2')
    os.makedirs(learning_dir)
    table = replication_report.write_report(
        other, learning_dir, self.protocol, exp_factory.get_exp_config('bert_mini'), 9000,
        'python tools/replicate.py', random_init_dir=main)
    self.assertIn('| BERT | 62.0 (61.0–63.0) | 1e-4 |', table)
    self.assertIn('| yes / yes / yes |', table)
    self.assertIn('| random init | 52.0 (50.0–54.0) | 1e-4 |', table)
    with open(os.path.join(other, 'replication.md')) as f:
      self.assertIn('The random-init rows are the runs in `../out`: random init does not depend '
                    'on the pretraining run', f.read())

  def test_write_report_writes_table_json_and_plots(self):
    # Another budget's results, as `tools/replicate.py --learning_dir` takes them.
    learning_dir = os.path.join(self.get_temp_dir(), 'budgets', 'learning_3000')
    os.makedirs(learning_dir)
    curve = [dict(step=s, flops=s * 3e10, train_seconds=s * 0.8, mlm_accuracy=s / 1e4)
             for s in (1000, 3000)]
    with open(os.path.join(learning_dir, 'bert.json'), 'w') as f:
      json.dump(dict(curve=curve, setup=dict(max_train_flops=9e13, seed=2)), f)
    _commit_seeds(self.out_dir, 'random', [0.50, 0.52, 0.54])
    _commit_seeds(self.out_dir, 'bert', [0.61, 0.62, 0.63])
    command = 'python tools/replicate.py --bert_steps=3000 --seeds=3 --pretraining_seed=2'
    table = replication_report.write_report(self.out_dir, learning_dir, self.protocol,
                                            exp_factory.get_exp_config('bert_mini'), 3000, command)
    self.assertIn('| BERT | 62.0 (61.0–63.0) | 1e-4 |', table)
    self.assertIn('| yes / yes / yes | 9e+13 | 3,000 | 40.0 |', table)
    # Every row, the separator included, has the header's columns.
    self.assertLen({line.count('|') for line in table.splitlines()}, 1)
    with open(os.path.join(self.out_dir, 'replication.md')) as f:
      text = f.read()
    self.assertIn(table, text)
    self.assertIn(f'`{command}`: every `<objective>_mini`', text)
    self.assertIn('to 9e+13 training FLOPs, the cost of 3,000 BERT-mini steps, pretraining seed 2;',
                  text)
    self.assertIn('40% masking', text)
    self.assertIn("Training minutes are the pretraining runs' wall time on the machines the "
                  'learning report names.', text)
    self.assertIn('the dev score at the end of fine-tuning (the TEAMS paper reports the best', text)
    # The link to the learning report resolves from the report's own directory.
    link = re.search(r'pretrained by the learning benchmark \(([^)]+)\)', text).group(1)
    self.assertEqual(os.path.realpath(os.path.join(learning_dir, 'learning.md')),
                     os.path.realpath(os.path.join(self.out_dir, link)))
    with open(os.path.join(self.out_dir, 'replication.json')) as f:
      self.assertEqual(0.62, json.load(f)['encoders']['bert']['tasks']['sst2']['median'])
    for name in ('pretraining.png', 'glue.png'):
      self.assertGreater(os.path.getsize(os.path.join(self.out_dir, name)), 1000)

  def test_pooled_protocol_pools_standardizes_sts_b_and_chooses_the_rate_on_the_slice(self):
    protocol = dataclasses.replace(finetune_protocols.PROTOCOLS['pooled'],
                                   learning_rates=(1e-4, 3e-4))
    runs = dataclasses.replace(self.runs, protocol=protocol)
    os.makedirs(os.path.join(runs.data_dir, 'stsb'))
    with open(os.path.join(runs.data_dir, 'stsb', 'meta_data.json'), 'w') as f:
      json.dump(dict(train_label_mean=2.7, train_label_std=1.46), f)
    stsb = replication.sweep_settings(runs, replication.Unit('teams', 'stsb', 1e-4, 1))
    sst2 = replication.sweep_settings(runs, replication.Unit('teams', 'sst2', 1e-4, 1))
    field = finetune_protocols.LEARNING_RATE_FIELD
    self.assertEqual(f'{field}=0.0001,task.model.pooling=siamese_cosine,'
                     'task.model.regression_mean=2.7,task.model.regression_std=1.46',
                     stsb['params_override'])
    self.assertEqual(f'{field}=0.0001,task.model.pooling=mean', sst2['params_override'])
    self.assertTrue(stsb['select_epoch'])
    self.assertFalse(replication.sweep_settings(
        self.runs, replication.Unit('teams', 'stsb', 1e-4, 1))['select_epoch'])
    # Dev prefers 1e-4, the held-out slice 3e-4: the slice decides.
    for rate, dev, heldout in ((1e-4, 0.9, 0.6), (3e-4, 0.5, 0.7)):
      path = replication.unit_path(self.out_dir, replication.Unit('teams', 'sst2', rate, 1))
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, 'w') as f:
        json.dump(dict(_sweep_result('sst2', 1, dev), selection=dict(
            step=20, epochs=[dict(step=10, value=0.99), dict(step=20, value=heldout)])), f)
    self.assertEqual(3e-4, replication.choose_learning_rate(protocol, self.out_dir, 'teams',
                                                            'sst2'))
    self.assertEqual(1e-4, replication.choose_learning_rate(self.protocol, self.out_dir, 'teams',
                                                            'sst2'))
    settings = replication.unit_settings(runs, replication.Unit('teams', 'stsb', 1e-4, 1))
    self.assertEqual(('siamese_cosine', True, 1000),
                     (settings['pooling'], settings['standardize_regression'],
                      settings['heldout_examples']))
    # A result committed before these settings existed was run with the [CLS] head.
    old = replication.unit_settings(self.runs, replication.Unit('teams', 'stsb', 1e-4, 1))
    for key in ('pooling', 'standardize_regression', 'heldout_examples', 'pretraining_seed'):
      old.pop(key)
    self.assertEqual(replication.unit_settings(self.runs,
                                               replication.Unit('teams', 'stsb', 1e-4, 1)),
                     replication.committed_settings(dict(settings=old)))

  def test_glue_tasks_are_converted_once_with_the_protocol(self):
    glue_dir, data_dir = os.path.join(self.get_temp_dir(), 'glue'), self.runs.data_dir
    for folder in ('SST-2', 'CoLA', 'STS-B'):
      os.makedirs(os.path.join(glue_dir, folder))
    convert = mock.Mock()
    kept = dict(vocab_file='vocab.txt', lower_case=True, max_seq_length=64,
                max_train_examples=8000)
    os.makedirs(os.path.join(data_dir, 'sst2'))
    with open(os.path.join(data_dir, 'sst2', 'meta_data.json'), 'w') as f:
      json.dump(kept, f)
    replication.prepare_glue(self.protocol, glue_dir, 'vocab.txt', data_dir, convert,
                             log=lambda _: None)
    self.assertEqual([dict(task=task, source=os.path.join(glue_dir, folder),
                           output_dir=os.path.join(data_dir, task), subset_seed=0,
                           vocab_file=os.path.abspath('vocab.txt'), lower_case=True,
                           max_seq_length=64, max_train_examples=None, heldout_examples=0)
                      for task, folder in (('cola', 'CoLA'), ('stsb', 'STS-B'))],
                     [call.kwargs for call in convert.call_args_list])
    # Another release's copy of the same vocabulary is the same setting; other tokens are not.
    vocab = os.path.join(self.get_temp_dir(), 'vocab.txt')
    copy = os.path.join(self.get_temp_dir(), 'other_release', 'vocab.txt')
    os.makedirs(os.path.dirname(copy))
    for path, tokens in ((vocab, '[PAD]\nthe\n'), (copy, '[PAD]\nthe\n')):
      with open(path, 'w') as f:
        f.write(tokens)
    with open(os.path.join(data_dir, 'sst2', 'meta_data.json'), 'w') as f:
      json.dump(dict(kept, vocab_file=vocab), f)
    convert.reset_mock()
    replication.prepare_glue(dataclasses.replace(self.protocol, tasks=('sst2',)), glue_dir, copy,
                             data_dir, convert, log=lambda _: None)
    convert.assert_not_called()
    with open(copy, 'w') as f:
      f.write('[PAD]\na\n')
    with self.assertRaisesRegex(ValueError, 'converted with {.vocab_file.: .*remove'):
      replication.prepare_glue(self.protocol, glue_dir, copy, data_dir, convert,
                               log=lambda _: None)
    with open(os.path.join(data_dir, 'sst2', 'meta_data.json'), 'w') as f:
      json.dump(kept, f)
    with self.assertRaisesRegex(ValueError, "converted with {'max_seq_length': 64}"):
      replication.prepare_glue(dataclasses.replace(self.protocol, max_seq_length=32), glue_dir,
                               'vocab.txt', data_dir, convert, log=lambda _: None)
    with self.assertRaisesRegex(ValueError, 'lacks SST-2/'):
      replication.prepare_glue(self.protocol, self.get_temp_dir(), 'vocab.txt',
                               os.path.join(self.get_temp_dir(), 'new'), convert,
                               log=lambda _: None)

  def test_prepare_pretrains_converts_the_glue_download_and_checks_committed_results(self):
    glue_dir = os.path.join(self.get_temp_dir(), 'download')
    for task, (folder, _) in finetune_protocols.GLUE_TASKS.items():
      glue_test.write_fixture(os.path.join(glue_dir, folder), task)
    vocab = embedded.resolve_path('sample:vocab')
    setup = learning.Setup('t', 'v', 'tfrecord', vocab, 3660, 9e13, 10, 2, self.work_dir,
                           self.out_dir)

    def prepare():
      with mock.patch.object(learning, 'run_objective', return_value={}):
        return replication.prepare(self.protocol, ['bert'], setup, {'bert': 1.0}, glue_dir,
                                   self.out_dir, self.work_dir, glue.convert_tsv,
                                   log=lambda _: None)

    runs = prepare()
    self.assertEqual(replication.Replication(
        self.protocol, self.out_dir, self.work_dir, os.path.join(self.work_dir, 'glue_3660'),
        {'bert': learning.run_dir(setup, 'bert')}, 9e13), runs)
    for task in finetune_protocols.GLUE_TASKS:
      with open(os.path.join(runs.data_dir, task, 'meta_data.json')) as f:
        meta = json.load(f)
      self.assertEqual((task, 64, True, vocab),
                       (meta['task'], meta['max_seq_length'], meta['lower_case'],
                        meta['vocab_file']))
    committed = replication.unit_path(self.out_dir, replication.Unit('bert', 'sst2', 1e-4, 1))
    os.makedirs(os.path.dirname(committed))
    with open(committed, 'w') as f:
      json.dump({'settings': {'epochs': 5}}, f)
    with self.assertRaisesRegex(ValueError, 'bert/sst2_lr1e-4_seed1.json was run with other'):
      prepare()


if __name__ == '__main__':
  tf.test.main()
