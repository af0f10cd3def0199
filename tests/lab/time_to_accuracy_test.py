"""Time to accuracy: each implementation trains and is scored; minutes, ratios and the report."""

import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from teams_lab import time_to_accuracy
from teams_lab import time_to_accuracy_data
from teams_lab import time_to_accuracy_report
from teams_lab import time_to_accuracy_scores
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import corpus
from teams_tf.data import embedded
from teams_tf.data import tokenization
from teams_tf.preprocessing import pretraining_records
from teams_tf.preprocessing import record_format


def _records(root):
  """Unmasked records of the embedded sample at the recipe's T, as the benchmark reads them."""
  vocab = embedded.resolve_path('sample:vocab')
  paths = {}
  for split in ('train', 'valid'):
    out = os.path.join(root, f'records_{split}')
    pretraining_records.create_pretraining_data(
        corpus.CorpusSource(input_patterns=f'sample:{split}'),
        record_format.RecordOptions(vocab_file=vocab, seq_length=time_to_accuracy.seq_length(),
                                    output_kind='unmasked'),
        out, num_shards=2, num_workers=1, overwrite=True)
    paths[split] = os.path.join(out, 'pretrain-*.tfrecord')
  return vocab, paths['train'], paths['valid']


def _curve(*points):
  return [dict(step=500 * (i + 1), minutes=minutes, mlm_accuracy=accuracy,
               flops=3.6e10 * 500 * (i + 1)) for i, (minutes, accuracy) in enumerate(points)]


_MACHINE = 'AMD EPYC (family 25 model 17; AVX-512, AVX512_BF16), 2 cores'


def _result(name, *points, machine=_MACHINE):
  return dict(description=name, unmatched=[], commands=[], machine=machine,
              curve=_curve(*points))


class TimeToAccuracyTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root = tempfile.mkdtemp()
    vocab, train, valid = _records(cls.root)
    cls.setup = time_to_accuracy.Setup(
        train_input=train, validation_input=valid, vocab_file=vocab,
        vocab_size=tokenization.load_vocabulary(vocab).size,
        work_dir=os.path.join(cls.root, 'work'), out_dir=os.path.join(cls.root, 'out'),
        train_steps=2, checkpoint_interval=1, batch_size=4, machine=_MACHINE)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root, ignore_errors=True)
    super().tearDownClass()

  def _trains_and_scores(self, name):
    messages = []
    result = time_to_accuracy.run_implementation(self.setup, name, log=messages.append)
    self.assertIsNotNone(result, messages)
    self.assertEqual([row['step'] for row in result['curve']], [1, 2])
    for row in result['curve']:
      self.assertBetween(row['mlm_accuracy'], 0.0, 1.0)
      self.assertGreater(row['minutes'], 0.0)
    self.assertLess(result['curve'][0]['minutes'], result['curve'][1]['minutes'])
    self.assertEqual(result['curve'][1]['flops'], 2 * result['flops_per_step'])
    # A second call reads the result file instead of training again.
    again = []
    self.assertEqual(time_to_accuracy.run_implementation(self.setup, name, log=again.append),
                     json.loads(json.dumps(result)))
    self.assertIn('skipping', again[-1])
    return result

  def test_teams_tf_trains_and_is_scored(self):
    self._trains_and_scores('teams_tf')

  def test_model_garden_trains_from_masked_records_and_is_scored(self):
    result = self._trains_and_scores('model_garden')
    self.assertIn('official.nlp.train', result['commands'][0])

  def test_hugging_face_trains_and_is_scored(self):
    result = self._trains_and_scores('hugging_face')
    self.assertIn('teams_lab.hugging_face_mlm', result['commands'][0])

  def test_teams_pair_trains_and_is_scored_by_generator_accuracy_and_rtd_auc(self):
    results = {name: self._trains_and_scores(name)
               for name in ('teams_tf_teams', 'model_garden_teams')}
    self.assertIn('--experiment=teams_mini', results['teams_tf_teams']['commands'][0])
    self.assertIn('teams_lab.model_garden_teams', results['model_garden_teams']['commands'][0])
    for result in results.values():
      for row in result['curve']:
        self.assertBetween(row['rtd_auc'], 0.0, 1.0)
    # One analytic count for both: the recipe's.
    self.assertEqual(results['teams_tf_teams']['flops_per_step'],
                     results['model_garden_teams']['flops_per_step'])
    summary = time_to_accuracy_report.teams_summary(results)
    self.assertEqual(sorted(summary['targets']), ['mlm_accuracy', 'rtd_auc'])

  def test_both_recipes_mask_alike_so_the_pairs_share_records_and_evaluation_set(self):
    mlm = time_to_accuracy.recipe(self.setup)
    teams = time_to_accuracy.recipe(self.setup, time_to_accuracy.TEAMS_EXPERIMENT)
    self.assertEqual(mlm.task.train_data.as_dict(), teams.task.train_data.as_dict())
    self.assertEqual(mlm.task.validation_data.as_dict(), teams.task.validation_data.as_dict())
    self.assertEqual(mlm.trainer.optimizer_config.as_dict(),
                     teams.trainer.optimizer_config.as_dict())

  def test_rtd_auc_is_the_share_of_replaced_original_pairs_ranked_right(self):
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=(3, 7)).astype(np.float32)  # Many ties.
    replaced = rng.integers(0, 2, size=(3, 7))
    weights = np.ones((3, 7))
    weights[:, 5:] = 0
    keep = weights.reshape(-1) > 0
    flat, labels = scores.reshape(-1)[keep], replaced.reshape(-1)[keep] > 0
    pairs = [(p, n) for p in flat[labels] for n in flat[~labels]]
    expected = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs])
    self.assertAlmostEqual(time_to_accuracy_scores.rtd_auc(scores, replaced, weights), expected)
    self.assertTrue(np.isnan(time_to_accuracy_scores.rtd_auc(scores, 0 * replaced, weights)))

  def test_teams_summary_times_both_to_the_peers_final_auc(self):
    def teams_curve(*points):
      return [dict(step=500 * (i + 1), minutes=m, mlm_accuracy=a, rtd_auc=auc,
                   flops=1e12 * (i + 1)) for i, (m, a, auc) in enumerate(points)]
    results = {
        'teams_tf_teams': dict(_result('ours'), curve=teams_curve((10, 0.30, 0.80),
                                                                  (20, 0.34, 0.90))),
        'model_garden_teams': dict(_result('mg'), curve=teams_curve((30, 0.25, 0.70),
                                                                    (60, 0.32, 0.85))),
    }
    numbers = time_to_accuracy_report.teams_summary(results)
    # Ours reaches 0.85 halfway between 10 and 20 minutes; Model Garden at its last checkpoint.
    self.assertAlmostEqual(numbers['targets']['rtd_auc']['ours'], 15.0)
    self.assertAlmostEqual(numbers['targets']['rtd_auc']['ratio'], 4.0)
    self.assertAlmostEqual(numbers['targets']['mlm_accuracy']['ours'], 15.0)
    # The TEAMS pair stays out of the MLM recipe's headline.
    self.assertEqual(time_to_accuracy_report.summary(results)['rows'], {})
    text = time_to_accuracy_report.markdown({_MACHINE: results}, '# title')
    self.assertIn("final RTD AUC (0.8500): teams_tf 15.0, Model Garden 60.0; peer minutes / "
                  'teams_tf minutes **4.00**', text)
    # Runs of other lengths decay their rates differently: no ratio.
    results['model_garden_teams']['settings'] = dict(train_steps=4000)
    self.assertEqual(time_to_accuracy_report.teams_summary(results)['targets'], {})
    self.assertIn('No ratio: the two runs trained to different steps',
                  time_to_accuracy_report.markdown({_MACHINE: results}, '# title'))

  def test_a_result_of_other_settings_is_not_reused(self):
    out_dir = tempfile.mkdtemp()
    setup = time_to_accuracy.Setup(**{**self.setup.__dict__, 'out_dir': out_dir})
    run = time_to_accuracy.settings(setup, 'teams_tf')
    path = time_to_accuracy.result_file(out_dir, 'teams_tf', _MACHINE)
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as f:
      json.dump(dict(settings={**run.__dict__, 'train_steps': 99}), f)
    with self.assertRaisesRegex(ValueError, 'other settings'):
      time_to_accuracy.run_implementation(setup, 'teams_tf')
    with self.assertRaisesRegex(ValueError, "Unknown implementation 'jax'"):
      time_to_accuracy.run_implementation(setup, 'jax')

  def test_a_finished_run_is_skipped_without_writing_its_inputs(self):
    root = tempfile.mkdtemp()
    setup = time_to_accuracy.Setup(**{**self.setup.__dict__, 'out_dir': root,
                                      'work_dir': os.path.join(root, 'work')})
    run = time_to_accuracy.settings(setup, 'model_garden')
    path = time_to_accuracy.result_file(root, 'model_garden', _MACHINE)
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as f:
      json.dump(dict(settings=run.__dict__, curve=[]), f)
    self.assertEqual(time_to_accuracy.run_implementation(setup, 'model_garden')['curve'], [])
    self.assertFalse(os.path.exists(setup.work_dir))
    # On another CPU the run is not done: minutes taken there are another result.
    other = time_to_accuracy.Setup(**{**setup.__dict__, 'machine': 'AMD EPYC (family 25 model 1; '
                                      'no AVX-512), 2 cores'})
    self.assertNotEqual(time_to_accuracy.run_dir(setup, 'model_garden'),
                        time_to_accuracy.run_dir(other, 'model_garden'))
    self.assertFalse(os.path.exists(time_to_accuracy.result_file(root, 'model_garden',
                                                                 other.machine)))

  def test_evaluation_set_masks_15_percent_of_every_held_out_sequence(self):
    run = time_to_accuracy.settings(self.setup, 'teams_tf')
    time_to_accuracy.write_inputs(self.setup, run)
    evaluation = time_to_accuracy_data.load_evaluation_set(run.evaluation_set)
    real = evaluation['input_mask'].sum(axis=1) - 2  # Without [CLS] and the last [SEP].
    masked = evaluation['masked_lm_weights'].sum(axis=1)
    self.assertLen(masked, 301)  # Every held-out sequence of the sample.
    self.assertAllClose(masked.mean() / real.mean(), 0.15, atol=0.02)

  def test_masked_epochs_mask_each_epoch_anew_for_model_garden_loader(self):
    out_dir = os.path.join(tempfile.mkdtemp(), 'masked')
    run = time_to_accuracy.settings(self.setup, 'teams_tf')
    data = time_to_accuracy.recipe(self.setup).task.train_data
    pattern = time_to_accuracy_data.masked_epochs(data, self.setup.train_input,
                                                  self.setup.vocab_file, 10, 2, out_dir)
    spec = record_format.feature_spec(record_format.RecordOptions(
        vocab_file='', seq_length=run.seq_length, max_predictions_per_seq=run.max_predictions))
    epochs = []
    for epoch in range(2):
      files = sorted(tf.io.gfile.glob(os.path.join(out_dir, f'epoch-{epoch:03d}-*.tfrecord')))
      records = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(files)]
      epochs.append(np.stack([r['masked_lm_positions'].numpy() for r in records]))
    self.assertLen(tf.io.gfile.glob(pattern), 16)
    self.assertEqual(epochs[0].shape, epochs[1].shape)
    self.assertFalse(np.array_equal(epochs[0], epochs[1]))
    self.assertEqual(time_to_accuracy_data.epochs_needed(10_000, 64, 280_047), 3)

  def test_elapsed_seconds_add_a_resumed_launch_to_the_checkpoint_it_resumed(self):
    launches = [dict(started=100.0, resumed_step=0), dict(started=1000.0, resumed_step=500)]
    written = {500: 160.0, 1000: 220.0, 1500: 1090.0}
    # Step 1,000 was written by the first launch, which then died; the second resumed 500.
    self.assertEqual(time_to_accuracy.elapsed_seconds(written, launches),
                     {500: 60.0, 1000: 120.0, 1500: 150.0})
    self.assertEqual(time_to_accuracy.elapsed_seconds({500: 50.0}, launches), {})

  def test_mlm_accuracy_counts_only_real_predictions(self):
    evaluation = dict(masked_lm_ids=np.array([[5, 6, 0], [7, 0, 0]]),
                      masked_lm_weights=np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    predicted = np.array([[5, 9, 0], [7, 0, 0]])
    self.assertAlmostEqual(time_to_accuracy_scores.mlm_accuracy(predicted, evaluation), 2 / 3)

  def test_minutes_to_interpolates_between_the_evaluations_around_the_threshold(self):
    curve = _curve((10.0, 0.30), (20.0, 0.38), (30.0, 0.42))
    self.assertAlmostEqual(time_to_accuracy_report.minutes_to(curve, 0.35), 10 + 10 * 5 / 8)
    self.assertAlmostEqual(time_to_accuracy_report.minutes_to(curve, 0.29), 10.0)
    self.assertIsNone(time_to_accuracy_report.minutes_to(curve, 0.5))

  def test_summary_ratios_headline_and_report(self):
    results = {
        'teams_tf': _result('ours', (10.0, 0.36), (20.0, 0.41)),
        # Ours without its recipe's bias is not a peer.
        'teams_tf_absolute': _result('ours, absolute', (5.0, 0.36), (8.0, 0.41)),
        'model_garden': _result('mg', (30.0, 0.36), (60.0, 0.39)),
        'hugging_face': _result('hf', (15.0, 0.36), (40.0, 0.41)),
    }
    numbers = time_to_accuracy_report.summary(results)
    self.assertAlmostEqual(numbers['rows']['hugging_face']['ratio']['0.35']['value'], 1.5)
    # Model Garden never reached 40%: its whole hour over ours' 18 minutes is a lower bound.
    self.assertAlmostEqual(numbers['rows']['model_garden']['ratio']['0.4']['value'], 60 / 18)
    self.assertTrue(numbers['rows']['model_garden']['ratio']['0.4']['lower_bound'])
    self.assertEqual(numbers['headline']['0.35'],
                     dict(fastest_peer='hugging_face', value=1.5, lower_bound=False, met=True))
    self.assertEqual(numbers['headline']['0.4']['fastest_peer'], 'hugging_face')
    self.assertAlmostEqual(numbers['headline']['0.4']['value'], 35 / 18)
    self.assertNotIn('teams_tf_absolute', [h['fastest_peer'] for h in numbers['headline'].values()])

  def test_report_is_written_from_the_result_files_with_ratios_within_a_machine(self):
    out_dir = tempfile.mkdtemp()
    legacy = 'AMD EPYC, 2 cores'
    alone = 'Other CPU, 2 cores'
    for name, points, machine in (('teams_tf', ((10.0, 0.36),), _MACHINE),
                                  ('hugging_face', ((30.0, 0.30),), _MACHINE),
                                  ('model_garden', ((1.0, 0.36),), legacy),
                                  ('teams_tf', ((10.0, 0.36),), alone)):
      path = time_to_accuracy.result_file(out_dir, name, machine)
      os.makedirs(os.path.dirname(path), exist_ok=True)
      with open(path, 'w') as f:
        json.dump(_result(name, *points, machine=machine), f)
    machines = time_to_accuracy_report.write_report(out_dir, '# title')
    self.assertEqual(sorted(machines), sorted([legacy, _MACHINE, alone]))
    with open(os.path.join(out_dir, 'time_to_accuracy.md')) as f:
      text = f.read()
    # 1.8e13 FLOPs in 30 minutes: 10 GFLOP/s.
    self.assertIn('| hugging_face | not reached | not reached | >3.00 | — | 30.00% | 500 | 30.0 | '
                  '10.0 |', text)
    # Model Garden's 1 minute on another CPU is no ratio to ours, nor the headline's fastest peer.
    self.assertIn('| model_garden | 1.0 | not reached | — | — | 36.00% | 500 | 1.0 | 300.0 |', text)
    self.assertIn('| 35% | hugging_face | >3.00 | yes |', text)
    self.assertIn('No ratios: teams_tf has not run on this machine', text)
    self.assertEqual(1, text.count('No ratios: no peer has run on this machine yet '
                                   '(`--implementations=model_garden,hugging_face`).'))
    self.assertIn('predates the CPU signature', text)
    with open(os.path.join(out_dir, 'time_to_accuracy.json')) as f:
      self.assertEqual(json.load(f)['machines'][_MACHINE]['headline']['0.35']['fastest_peer'],
                       'hugging_face')
    self.assertTrue(os.path.exists(os.path.join(out_dir, 'time_to_accuracy.png')))


if __name__ == '__main__':
  tf.test.main()
