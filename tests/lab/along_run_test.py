"""Fine-tuning a pretraining run along its checkpoints, on fake pretraining and fine-tuning."""

import dataclasses
import json
import os

import tensorflow as tf

from teams_lab import along_run
from teams_lab import finetune_protocols
from teams_lab import learning
from teams_lab import replication
from tests.lab import replication_test

_FLOPS_PER_STEP = 6e10


class AlongRunTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    root = self.get_temp_dir()
    self.work_dir, self.learning_dir = os.path.join(root, 'work'), os.path.join(root, 'learning')
    self.replication_dir = os.path.join(root, 'replication_seed2')
    self.random_dir, self.out_dir = os.path.join(root, 'replication'), os.path.join(root, 'along')
    setup = learning.Setup('t', 'v', 'tfrecord', os.path.join(root, 'vocab.txt'), 100, 9e13, 500,
                           2, os.path.join(root, 'elsewhere'), self.learning_dir, seed=2)
    os.makedirs(self.learning_dir)
    with open(os.path.join(self.learning_dir, 'teams.json'), 'w') as f:
      json.dump(dict(objective='teams', setup=dataclasses.asdict(setup),
                     flops_per_step=_FLOPS_PER_STEP, targets=[],
                     curve=[dict(step=step, flops=step * _FLOPS_PER_STEP,
                                 train_seconds=step * 0.6) for step in (500, 1000, 1500)]), f)
    # The run keeps a checkpoint every 500 steps; the last, 1,500, is the replication's.
    self.run_dir = os.path.join(self.work_dir, 'teams_seed2_9e+13flops')
    os.makedirs(self.run_dir)
    for step in (500, 1000, 1500):
      with open(os.path.join(self.run_dir, f'ckpt-{step}.index'), 'w'):
        pass
    # The replication chose 1e-4 on every task for the last checkpoint.
    replication_test._commit_seeds(self.replication_dir, 'teams', [0.6, 0.62, 0.64])
    replication_test._commit_seeds(self.random_dir, 'random', [0.4, 0.41, 0.42])
    self.protocol = finetune_protocols.FineTuneProtocol(learning_rates=(1e-4, 3e-4))

  def _along(self, steps):
    along, self.pretraining = along_run.build(self.protocol, 'teams', steps, self.learning_dir,
                                              self.replication_dir, self.random_dir,
                                              self.out_dir, self.work_dir)
    return along

  def _run(self, along, fake):
    lines = []
    clock = iter(range(0, 10_000, 60))
    along_run.run(along, fake, lambda: 'TABLE', log=lines.append, clock=lambda: next(clock))
    return lines

  def test_earlier_checkpoints_fine_tune_at_the_rates_of_the_last_and_are_reported(self):
    along = self._along((500, 1000))
    self.assertEqual({'teams': self.run_dir}, along.sweep.run_dirs)
    self.assertEqual((9e13, 2, self.replication_dir),
                     (along.sweep.max_train_flops, along.sweep.pretraining_seed,
                      along.sweep.out_dir))
    along_run.check(along)
    fake = replication_test.FakeSweep()  # CoLA at 1e-4 scores 0.1 more.
    lines = self._run(along, fake)
    self.assertLen(fake.calls, 2 * 3 * 3)
    first, last = fake.calls[0], fake.calls[-1]
    self.assertEqual(os.path.join(self.run_dir, 'ckpt-500'), first['init_checkpoint'])
    self.assertEqual(os.path.join(self.run_dir, 'ckpt-1000'), last['init_checkpoint'])
    self.assertEqual(f'{finetune_protocols.LEARNING_RATE_FIELD}=0.0001', first['params_override'])
    self.assertEqual(('stsb', '3,'), (last['tasks'][0], last['seeds']))
    # Each step's sweeps run apart from the replication's, which resume what they find.
    self.assertEqual(os.path.join(self.work_dir, 'along_step_500', 'replication_seed2_9e+13flops',
                                  'teams', 'sst2', 'lr_1e-4'), first['output_dir'])
    committed = replication.read_unit(os.path.join(self.out_dir, 'step_1000'),
                                      replication.Unit('teams', 'cola', 1e-4, 2))
    self.assertEqual((1000, 2, 9e13), tuple(committed['settings'][key] for key in (
        'pretraining_step', 'pretraining_seed', 'pretraining_flops')))
    self.assertEqual('0 of 18 fine-tuning unit(s) done, 18 to run', lines[0])
    self.assertIn('[10/18] step 1,000: teams sst2 lr 1e-4 seed 1', lines)
    self.assertIn('done step 500 teams sst2 lr 1e-4 seed 1: dev accuracy 0.5100 in 1.0 min; 17 '
                  'unit(s) left, ETA 0.3 h', lines)
    # A rerun runs nothing.
    again = replication_test.FakeSweep()
    self.assertEqual('18 of 18 fine-tuning unit(s) done, 0 to run', self._run(along, again)[0])
    self.assertEqual([], again.calls)

    text = along_run.write_report(along, self.pretraining, 'python tools/finetune_along_run.py')
    self.assertIn('at the rate the replication chose for the last checkpoint (SST-2 1e-4, CoLA '
                  '1e-4, STS-B 1e-4), seeds 1..3.', text)
    rows = [line for line in text.splitlines() if line.startswith('| ')][1:]
    self.assertEqual([
        '| random init | 0 | 0.0 | 41.0 (40.0–42.0) | 41.0 (40.0–42.0) | 41.0 (40.0–42.0) | 41.0 '
        '| (floor) |',
        '| 500 | 3e+13 | 5.0 | 52.0 (51.0–53.0) | 62.0 (61.0–63.0) | 52.0 (51.0–53.0) | 55.3 | '
        'yes / yes / yes |',
        '| 1,000 | 6e+13 | 10.0 | 52.0 (51.0–53.0) | 62.0 (61.0–63.0) | 52.0 (51.0–53.0) | 55.3 | '
        'yes / yes / yes |',
        '| 1,500 | 9e+13 | 15.0 | 62.0 (60.0–64.0) | 62.0 (60.0–64.0) | 62.0 (60.0–64.0) | 62.0 | '
        'yes / yes / yes |'], rows)
    with open(os.path.join(self.out_dir, 'teams.json')) as f:
      self.assertEqual([0, 500, 1000, 1500], [row['step'] for row in json.load(f)['rows']])
    self.assertGreater(os.path.getsize(os.path.join(self.out_dir, 'teams.png')), 1000)

  def test_a_half_run_step_is_reported_with_its_seed_count_and_undecided(self):
    # Checkpoints fall between evaluations (a run saves first at step 100): the training
    # minutes are interpolated between those of the evaluations around it.
    along = self._along((600,))
    replication_test._commit(os.path.join(self.out_dir, 'step_600'), 'teams', 'sst2', 1e-4, 1,
                             0.45)
    text = along_run.write_report(along, self.pretraining, 'cmd')
    self.assertIn('| 600 | 3.6e+13 | 6.0 | 45.0 (45.0–45.0), 1/3 seeds | not run yet | not run '
                  'yet | — | — / — / — |', text)
    self.assertIn('| 1,500 | 9e+13 | 15.0 |', text)
    self.assertIn('| 100 | 6e+12 | — |', along_run.write_report(
        self._along((100,)), self.pretraining, 'cmd'))

  def test_steps_must_be_kept_checkpoints_before_the_last(self):
    for steps, wrong in (((700,), '[700]'), ((500, 1500), '[1500]')):
      with self.assertRaisesRegex(ValueError, 'keeps no checkpoint before its last at steps '
                                  + wrong.replace('[', r'\[').replace(']', r'\]') +
                                  '; it keeps 500, 1000 .* --keep_checkpoints'):
        along_run.check(self._along(steps))
    # Once a step's units are committed, its checkpoint may be gone.
    along = self._along((500,))
    self._run(along, replication_test.FakeSweep())
    tf.io.gfile.rmtree(self.run_dir)
    along_run.check(along)
    with self.assertRaisesRegex(ValueError, r'holds no checkpoint, so steps \[1000\] cannot be '
                                'fine-tuned: the pretraining run directory is gone'):
      along_run.check(self._along((500, 1000)))

  def test_a_unit_run_with_other_settings_is_refused(self):
    along = self._along((500,))
    self._run(along, replication_test.FakeSweep())
    other = dataclasses.replace(along, sweep=dataclasses.replace(
        along.sweep, protocol=dataclasses.replace(self.protocol, epochs=5)))
    with self.assertRaisesRegex(ValueError, 'step_500/teams/sst2_lr1e-4_seed1.json was run with '
                                'other settings'):
      along_run.check(other)

  def test_the_last_checkpoint_must_have_chosen_its_rates_and_the_run_must_exist(self):
    os.remove(replication.unit_path(self.replication_dir,
                                    replication.Unit('teams', 'cola', 3e-4, 1)))
    with self.assertRaisesRegex(ValueError, 'has not chosen the teams learning rate of cola yet'):
      self._along((500,))
    with self.assertRaisesRegex(ValueError, 'has no finished bert pretraining run'):
      along_run.build(self.protocol, 'bert', (500,), self.learning_dir, self.replication_dir,
                      self.random_dir, self.out_dir, self.work_dir)


if __name__ == '__main__':
  tf.test.main()
