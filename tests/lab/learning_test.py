"""The learning benchmark's bookkeeping: curves from summaries, verdicts, skip, report."""

import dataclasses
import json
import os
from unittest import mock

import tensorflow as tf

from official.core import exp_factory
from official.modeling.hyperparams import params_dict

from teams_lab import learning
from teams_lab import learning_data
from teams_lab import learning_report
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.preprocessing import record_format
from teams_tf.training import budgets
from teams_tf.training import experiment_flops
from teams_tf.training import run_summary
from teams_tf.training import schedules
from teams_tf.utils import hardware


def _write_events(directory, rows):
  """Scalar summaries {step: {tag: value}} as Model Garden's trainer writes them."""
  writer = tf.summary.create_file_writer(directory)
  with writer.as_default():
    for step, values in rows.items():
      for tag, value in values.items():
        tf.summary.scalar(tag, value, step=step)
  writer.close()


def _write_timed_events(path, wall_times):
  """An events file of training-loss summaries {step: wall_time}, after its header event."""
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(tf.compat.v1.Event(wall_time=0.0, file_version='brain.Event:2')
                 .SerializeToString())
    for step, wall_time in wall_times.items():
      summary = tf.compat.v1.Summary(
          value=[tf.compat.v1.Summary.Value(tag='training_loss', simple_value=1.0)])
      writer.write(tf.compat.v1.Event(wall_time=wall_time, step=step, summary=summary)
                   .SerializeToString())


def save_checkpoint(model_dir, step):
  """A checkpoint at training step `step`, named as Model Garden's trainer names it."""
  checkpoint = tf.train.Checkpoint(global_step=tf.Variable(step, dtype=tf.int64))
  tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=2,
                             checkpoint_name='ckpt').save(checkpoint_number=step)


def _setup(root):
  return learning.Setup(
      train_input='t', validation_input='v', input_format='tfrecord', vocab_file='vocab.txt',
      vocab_size=100, max_train_flops=1e12, validation_interval=10, validation_steps=2,
      work_dir=os.path.join(root, 'work'), out_dir=os.path.join(root, 'out'))


class LearningTest(tf.test.TestCase):

  def test_curve_has_flops_and_metrics_of_every_evaluation(self):
    model_dir = self.get_temp_dir()
    _write_events(os.path.join(model_dir, 'validation'), {
        10: dict(mlm_accuracy=0.1, mlm_context_free_accuracy=0.12),
        20: dict(mlm_accuracy=0.5, mlm_context_free_accuracy=0.12)})
    _write_events(os.path.join(model_dir, 'train'), {s: dict(training_loss=1.0)
                                                     for s in (5, 10, 15, 20)})
    rows = learning.curve(model_dir, flops_per_step=2.0)
    self.assertEqual([10, 20], [row['step'] for row in rows])
    self.assertEqual([20.0, 40.0], [row['flops'] for row in rows])
    self.assertAllClose([0.1, 0.5], [row['mlm_accuracy'] for row in rows])
    verdicts = learning.verdicts('bert', rows[-1])
    self.assertEqual([dict(metric='mlm_accuracy', value=rows[-1]['mlm_accuracy'], target=0.45,
                           baseline=rows[-1]['mlm_context_free_accuracy'], met=True)], verdicts)
    self.assertFalse(learning.verdicts('bert', rows[0])[0]['met'])
    # TEAMS without MWS reports no MWS metric and is held to the RTD and MLM targets only.
    last = dict(mlm_accuracy=0.4, mlm_context_free_accuracy=0.14, rtd_auc=0.9,
                rtd_context_free_auc=0.6)
    self.assertEqual([('mlm_accuracy', True), ('rtd_auc', True)],
                     [(v['metric'], v['met']) for v in learning.verdicts('teams_no_mws', last)])
    with_mws = dict(last, mws_accuracy=0.3)
    self.assertEqual(['mlm_accuracy', 'rtd_auc', 'mws_accuracy'],
                     [v['metric'] for v in learning.verdicts('teams', with_mws)])

  def test_training_seconds_leave_out_evaluations_and_restarts(self):
    # 1 s per step, except 10 -> 15, which holds the evaluation at step 10 and a 1-hour restart.
    times = {5: 100.0, 10: 105.0, 15: 3710.0, 20: 3715.0}
    self.assertEqual(15.0, learning.training_seconds(times, {10, 20}, 20))
    self.assertEqual(5.0, learning.training_seconds(times, {10, 20}, 10))
    self.assertIsNone(learning.training_seconds(times, {10}, 5))
    # A run killed after its checkpoint at step 12 and resumed there an hour later: the restart's
    # first summary (15) does not follow an evaluation.
    self.assertEqual(15.0, learning.training_seconds(times, {20}, 20, resumed={15}))

  def test_curve_counts_no_downtime_of_a_run_resumed_between_evaluations(self):
    model_dir = self.get_temp_dir()
    _write_events(os.path.join(model_dir, 'validation'), {20: dict(mlm_accuracy=0.5)})
    train_dir = os.path.join(model_dir, 'train')
    os.makedirs(train_dir)
    # 1 s per step; killed after a checkpoint at step 12, resumed there an hour later. Each start
    # of the trainer writes its own events file.
    _write_timed_events(os.path.join(train_dir, 'events.out.tfevents.1.host'),
                        {5: 100.0, 10: 105.0})
    _write_timed_events(os.path.join(train_dir, 'events.out.tfevents.2.host'),
                        {15: 3710.0, 20: 3715.0})
    self.assertEqual({15}, run_summary.resumed_steps(train_dir))
    self.assertEqual(15.0, learning.curve(model_dir, flops_per_step=1.0)[0]['train_seconds'])

  def test_finished_objective_is_skipped_and_reported(self):
    setup = _setup(self.get_temp_dir())
    os.makedirs(setup.out_dir)
    result = dict(objective='teams', flops_per_step=3e9, setup=dataclasses.asdict(setup), targets=[
        dict(metric='rtd_auc', value=0.9, target=0.85, baseline=0.5, met=True)],
                  curve=[dict(step=500, flops=1.5e12, train_seconds=60.0, rtd_auc=0.9,
                                     mws_context_free_accuracy=0.125)])
    with open(learning.result_path(setup, 'teams'), 'w') as f:
      json.dump(result, f)
    # A finished unit does not train again (there is no data here: training would fail).
    self.assertEqual(result, learning.run_objective('teams', setup, 3e9, log=lambda _: None))
    # The same file written from another clone (another out_dir) is the same run.
    result['setup']['out_dir'] = '/elsewhere/benchmarks/learning'
    with open(learning.result_path(setup, 'teams'), 'w') as f:
      json.dump(result, f)
    self.assertEqual(result, learning.run_objective('teams', setup, 3e9, log=lambda _: None))
    # A result of another budget is refused, not reused.
    other = dataclasses.replace(setup, max_train_flops=2e12)
    with self.assertRaisesRegex(ValueError, 'other settings'):
      learning.run_objective('teams', other, 3e9, log=lambda _: None)
    # So is another seed's; a file written before seeds existed is an unseeded run.
    with self.assertRaisesRegex(ValueError, 'other settings'):
      learning.run_objective('teams', dataclasses.replace(setup, seed=2), 3e9, log=print)
    del result['setup']['seed']
    with open(learning.result_path(setup, 'teams'), 'w') as f:
      json.dump(result, f)
    self.assertEqual(result, learning.run_objective('teams', setup, 3e9, log=lambda _: None))
    results = learning_report.write_report(setup, '# title')
    self.assertEqual(['teams'], list(results))
    with open(os.path.join(setup.out_dir, 'learning.md')) as f:
      report = f.read()
    self.assertIn('| teams | rtd_auc | 0.900 | 0.85 | 0.500 | yes |', report)
    self.assertIn('| bert | mlm_accuracy | not run yet | 0.45 |', report)
    # A context-free baseline the run reported is a curve column even when no target names it;
    # a metric no evaluation reported (here all but two) is no column of dashes.
    self.assertIn('| step | PFLOPs | training minutes | rtd_auc | mws_context_free_accuracy |\n',
                  report)
    self.assertIn('| 500 | 0.00 | 1.0 | 0.900 | 0.125 |\n', report)
    self.assertIn('3e+09 training FLOPs per step; trained on a machine not recorded.', report)
    self.assertTrue(os.path.getsize(os.path.join(setup.out_dir, 'learning.png')) > 1000)

  def test_final_run_dir_refuses_a_checkpoint_that_is_not_the_results(self):
    setup = _setup(self.get_temp_dir())
    result = dict(curve=[dict(step=500), dict(step=1200)])
    model_dir = learning.run_dir(setup, 'teams')
    # The run directory is gone (a fresh /tmp): the committed result has no checkpoint.
    with self.assertRaisesRegex(ValueError, 'holds no checkpoint, but .*teams.json is a run '
                                'that ended at step 1,200'):
      learning.final_run_dir(setup, 'teams', result)
    # A rerun cut off (or still training) in the same directory: not the result's encoder.
    save_checkpoint(model_dir, 1000)
    with self.assertRaisesRegex(ValueError, 'a checkpoint at step 1,000, .*move that result '
                                'file away'):
      learning.final_run_dir(setup, 'teams', result)
    save_checkpoint(model_dir, 1200)
    self.assertEqual(model_dir, learning.final_run_dir(setup, 'teams', result))

  def test_a_finished_run_records_its_curve_and_the_machine_that_timed_it(self):
    setup = _setup(self.get_temp_dir())
    os.makedirs(setup.out_dir)
    rows = [dict(step=10, flops=3e10, train_seconds=20.0, mlm_accuracy=0.5,
                 mlm_context_free_accuracy=0.1)]
    with mock.patch.object(learning.subprocess, 'run',
                           return_value=mock.Mock(returncode=0)) as train, \
        mock.patch.object(learning, 'curve', return_value=rows):
      result = learning.run_objective('bert', setup, 3e9, log=lambda _: None)
    self.assertEqual(learning.train_command('bert', setup), train.call_args.args[0])
    self.assertEqual(rows, result['curve'])
    self.assertEqual(hardware.description(), result['machine'])
    with open(learning.result_path(setup, 'bert')) as f:
      self.assertEqual(result, json.load(f))
    learning_report.write_report(setup, '# title')
    with open(os.path.join(setup.out_dir, 'learning.md')) as f:
      self.assertIn(f'training FLOPs per step; trained on {hardware.description()}.', f.read())

  def test_a_run_at_its_budget_without_a_result_is_not_trained_again(self):
    setup = _setup(self.get_temp_dir())
    os.makedirs(setup.out_dir)
    # 1e12 FLOPs at 3e9 per step is 333 steps; the run got there, its result write did not.
    save_checkpoint(learning.run_dir(setup, 'bert'), 333)
    rows = [dict(step=333, flops=333 * 3e9, train_seconds=20.0, mlm_accuracy=0.5)]
    with mock.patch.object(learning.subprocess, 'run') as train, \
        mock.patch.object(learning, 'curve', return_value=rows):
      result = learning.run_objective('bert', setup, 3e9, log=lambda _: None)
    train.assert_not_called()
    self.assertEqual(rows, result['curve'])
    self.assertTrue(os.path.exists(learning.result_path(setup, 'bert')))
    # One step short of the budget, it resumes.
    save_checkpoint(learning.run_dir(setup, 'electra'), 332)
    with mock.patch.object(learning.subprocess, 'run',
                           return_value=mock.Mock(returncode=0)) as train, \
        mock.patch.object(learning, 'curve', return_value=rows):
      learning.run_objective('electra', setup, 3e9, log=lambda _: None)
    train.assert_called_once()

  def test_runs_share_data_and_budget_overrides(self):
    setup = _setup(self.get_temp_dir())
    command = learning.train_command('electra', setup)
    self.assertIn('--experiment=electra_mini', command)
    override = [arg for arg in command if arg.startswith('--params_override=')][0]
    for field in ('trainer.max_train_flops=1000000000000.0', 'task.model.encoder.vocab_size=100',
                  'task.train_data.input_format=tfrecord'):
      self.assertIn(field, override)
    self.assertEqual(f'--model_dir={setup.work_dir}/electra_1e+12flops', command[5])
    self.assertFalse([arg for arg in command if arg.startswith('--seed')])

  def test_a_budget_past_the_recipe_trains_to_its_end_with_the_base_warmup(self):
    registered = exp_factory.get_exp_config('bert_mini')
    registered.task.model.encoder.vocab_size = 100
    flops_per_step = experiment_flops.step_flops(registered)
    for steps in (9000, 27000):  # The base budget and the compute ladder's 3x rung.
      setup = dataclasses.replace(_setup(self.get_temp_dir()),
                                  max_train_flops=(steps + 0.5) * flops_per_step)
      override = learning.overrides(setup, 'bert')
      params = exp_factory.get_exp_config('bert_mini')
      params_dict.override_params_dict(params, override, is_strict=True)
      # As teams_tf.train resolves them.
      schedules.follow_train_steps(params, registered)
      budgets.resolve(params)
      optimizer = params.trainer.optimizer_config
      self.assertEqual((steps, steps), (params.trainer.train_steps, schedules.decay_end(optimizer)))
      self.assertEqual(300, schedules.warmup_config(optimizer).warmup_steps)
      # Base-budget runs keep the command they were trained with.
      self.assertEqual(steps > registered.trainer.train_steps, 'train_steps' in override)

  def test_keep_checkpoints_keeps_every_checkpoint_and_is_the_same_run(self):
    setup = dataclasses.replace(_setup(self.get_temp_dir()), keep_checkpoints=True)
    params = exp_factory.get_exp_config('teams_mini')
    self.assertEqual(2, params.trainer.max_to_keep)
    params_dict.override_params_dict(params, learning.overrides(setup, 'teams'), is_strict=True)
    # Every checkpoint of a million-step run (the replication's runs take 3,600-9,000 steps).
    self.assertGreater(params.trainer.max_to_keep, 1_000_000 // params.trainer.checkpoint_interval)
    self.assertNotIn('max_to_keep', learning.overrides(_setup(self.get_temp_dir()), 'teams'))
    # A run that kept its checkpoints is reused by a command that does not ask for them.
    os.makedirs(setup.out_dir)
    result = dict(objective='bert', setup=dataclasses.asdict(setup), curve=[], targets=[])
    with open(learning.result_path(setup, 'bert'), 'w') as f:
      json.dump(result, f)
    self.assertEqual(result, learning.run_objective(
        'bert', dataclasses.replace(setup, keep_checkpoints=False), 3e9, log=lambda _: None))

  def test_a_seeded_run_has_its_own_directory_and_seeds_teams_tf_train(self):
    setup = dataclasses.replace(_setup(self.get_temp_dir()), seed=2)
    command = learning.train_command('electra_rtd10', setup)
    self.assertEqual(f'--model_dir={setup.work_dir}/electra_rtd10_seed2_1e+12flops', command[5])
    self.assertEqual('--seed=2', command[-1])
    text = learning_report.preamble(setup, 3000, 'python tools/benchmark_learning.py --seed=2')
    self.assertIn('`python tools/benchmark_learning.py --seed=2`: every', text)
    self.assertIn('(3,000 BERT-mini steps), seeded with 2 (`teams_tf.train --seed`) on', text)

  def test_prepare_data_names_missing_corpus_files(self):
    corpus_dir = self.get_temp_dir()
    with open(os.path.join(corpus_dir, 'wiki_00.txt'), 'w'):
      pass
    with self.assertRaisesRegex(ValueError, f'--corpus_dir={corpus_dir} lacks wiki_01.txt, '
                                'wiki_02.txt, wiki_03.txt...'):
      learning_data.prepare_data(corpus_dir, self.get_temp_dir(), 100, 32)

  def test_prepare_data_builds_only_what_is_missing(self):
    root = self.get_temp_dir()
    corpus_dir, work_dir = os.path.join(root, 'corpus'), os.path.join(root, 'work')
    os.makedirs(corpus_dir)
    for i in range(50):
      with open(os.path.join(corpus_dir, f'wiki_{i:02d}.txt'), 'w'):
        pass
    # The vocabulary and the training records are complete; the held-out records are not.
    os.makedirs(os.path.join(work_dir, 'records_100_train'))
    os.makedirs(os.path.join(work_dir, 'records_100_valid'))
    for path in ('vocab_100.txt', 'records_100_train/pretrain-summary.json'):
      with open(os.path.join(work_dir, path), 'w'):
        pass
    with mock.patch.object(learning_data.pretraining_records, 'create_pretraining_data',
                           return_value={}) as create, \
        mock.patch.object(learning_data.pretraining_records, 'summary_text', return_value=''), \
        mock.patch.object(learning_data.vocab_builder, 'build_vocabulary') as build_vocabulary:
      paths = learning_data.prepare_data(corpus_dir, work_dir, 100, 32)
    self.assertEqual((os.path.join(work_dir, 'vocab_100.txt'),
                      os.path.join(work_dir, 'records_100_train', 'pretrain-*.tfrecord'),
                      os.path.join(work_dir, 'records_100_valid', 'pretrain-*.tfrecord')), paths)
    build_vocabulary.assert_not_called()
    create.assert_called_once()
    source, options, output_dir = create.call_args.args
    self.assertEqual(os.path.join(corpus_dir, 'wiki_49.txt'), source.input_patterns)
    self.assertEqual('blank_line', source.document_mode)
    self.assertEqual(8, create.call_args.kwargs['num_shards'])
    self.assertEqual(os.path.join(work_dir, 'records_100_valid'), output_dir)
    # The records every published run trained on: the data tool's defaults, unmasked, T=32 here.
    self.assertEqual(record_format.RecordOptions(
        vocab_file=os.path.join(work_dir, 'vocab_100.txt'), seq_length=32,
        output_kind='unmasked', seed=12345), options)

  def test_step_flops_of_every_objective_grow_with_the_vocabulary(self):
    small, large = learning.step_flops(1000), learning.step_flops(8000)
    self.assertEqual(set(learning.mini_runs()), set(small))
    for objective in learning.OBJECTIVES:
      self.assertGreater(large[objective], small[objective])
    # Corrupting fewer positions costs nothing: the discriminator reads every token either way.
    self.assertEqual(small['electra'], small['electra_corrupt15'])

  def test_mini_runs_are_objectives_and_their_mini_variants(self):
    runs = learning.mini_runs()
    self.assertEqual(list(learning.OBJECTIVES), list(runs)[:len(learning.OBJECTIVES)])
    self.assertEqual('coco_lm_mini', runs['coco_lm'])
    self.assertEqual('electra_mini_corrupt15', runs['electra_corrupt15'])
    self.assertEqual('electra', learning.objective_of('electra_corrupt15'))
    self.assertNotIn('teams_top_task_layers', runs)  # Registered at small only.

  def test_preamble_states_budget_and_evaluation(self):
    setup = _setup(self.get_temp_dir())
    text = learning_report.preamble(
        setup, 3000, 'python tools/benchmark_learning.py --bert_steps=3000')
    self.assertStartsWith(text, '# Learning benchmark: mini objectives at equal training FLOPs\n')
    self.assertIn('`python tools/benchmark_learning.py --bert_steps=3000`: every', text)
    self.assertNotIn('seeded', text)
    self.assertIn('trained to 1e+12 FLOPs (3,000 BERT-mini steps)', text)
    self.assertIn('2 batches of', text)
    self.assertIn('every 10 steps; corpus vocabulary of 100 WordPiece tokens', text)


if __name__ == '__main__':
  tf.test.main()
