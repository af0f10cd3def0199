"""Releases: a run packed small, unpacked into a model_dir every tool reads, checked by hash."""

import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from teams_tf.serving import loaders
from teams_tf.serving import minimal_pairs
from teams_tf.training import checkpoints
from teams_tf.training import releases
from tests.serving import export_testing_utils as utils

_STEP = 1234
_TEXTS = ['The cat sat on the mat.', 'Mat the on sat cat the.', 'A dog barks.']


class ReleasesTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tempfile.mkdtemp()
    # Never the user's ~/.cache: an unpack an earlier run left there must not answer for this one.
    cls._cache = os.environ.get('TEAMS_TF_CACHE')
    os.environ['TEAMS_TF_CACHE'] = os.path.join(cls.work_dir, 'cache')
    cls.run_dir = os.path.join(cls.work_dir, 'teams')
    utils.write_pretraining_run(cls.run_dir, utils.copy_sample_vocab(cls.work_dir),
                                seq_length=24, step=_STEP)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.work_dir)
    if cls._cache is None:
      del os.environ['TEAMS_TF_CACHE']
    else:
      os.environ['TEAMS_TF_CACHE'] = cls._cache
    super().tearDownClass()

  def _scores(self, model_dir, method='rtd'):
    scorer, vocab, lower_case, seq_length = loaders.load_sentence_scorer(model_dir, method)
    return minimal_pairs.text_scorer(scorer, vocab, lower_case, seq_length)(_TEXTS)

  def _release(self, name, dtype='float16'):
    release_dir = os.path.join(tempfile.mkdtemp(dir=self.work_dir), name)
    release = releases.pack(self.run_dir, release_dir, train_flops=5e12, dtype=dtype,
                            about=dict(experiment='teams_tiny'))
    return release_dir, release

  def test_a_release_scores_as_its_run_does_and_records_step_flops_and_hashes(self):
    release_dir, release = self._release('teams_seed1')
    self.assertEqual((_STEP, 5e12, 'float16'),
                     (release['step'], release['train_flops'], release['dtype']))
    self.assertEqual({'weights.npz', 'vocab.txt'}, set(release['sha256']))
    self.assertEqual('teams_tiny', release['about']['experiment'])
    # Two bytes a value, half of float32's, plus the archive's few hundred bytes per array:
    # what keeps the committed releases small.
    size = os.path.getsize(os.path.join(release_dir, 'weights.npz'))
    self.assertLess(size, 2 * release['num_parameters'] + 400 * len(release['weights']))
    model_dir = os.path.join(tempfile.mkdtemp(dir=self.work_dir), 'unpacked')
    prefix = releases.unpack(release_dir, model_dir)
    self.assertEqual(_STEP, checkpoints.global_step(prefix))
    for method in ('masked_lm', 'rtd'):  # The generator's MLM and the kept encoder's head.
      # float16 weights: sentence log-probabilities agree to a few hundredths of a nat.
      self.assertAllClose(self._scores(self.run_dir, method), self._scores(model_dir, method),
                          atol=0.05, msg=method)
    # The kept encoder a fine-tuning run restores from `task.init_checkpoint`.
    encoder, *_ = loaders.restore_pretrained_encoder(model_dir)
    original, *_ = loaders.restore_pretrained_encoder(self.run_dir)
    self.assertAllClose(original.weights[0].numpy(), encoder.weights[0].numpy(), rtol=1e-3,
                        atol=1e-6)

  def test_float32_release_is_exact_and_its_unpack_outlives_the_release_directory(self):
    release_dir, _ = self._release('teams_fp32', dtype='float32')
    model_dir = releases.resolve_model_dir(release_dir)
    shutil.rmtree(release_dir)  # A moved clone or a deleted copy: the cached unpack still reads.
    self.assertAllEqual(self._scores(self.run_dir), self._scores(model_dir))

  def test_resolve_model_dir_unpacks_once_into_the_cache(self):
    release_dir, _ = self._release('teams_cached')
    model_dir = releases.resolve_model_dir(release_dir)
    self.assertStartsWith(model_dir, os.environ['TEAMS_TF_CACHE'])
    stamp = os.path.getmtime(tf.train.latest_checkpoint(model_dir) + '.index')
    self.assertEqual(model_dir, releases.resolve_model_dir(release_dir))
    self.assertEqual(stamp, os.path.getmtime(tf.train.latest_checkpoint(model_dir) + '.index'))
    self.assertEqual(self.run_dir, releases.resolve_model_dir(self.run_dir))

  def test_a_changed_weights_file_is_refused_by_its_hash(self):
    release_dir, _ = self._release('teams_tampered')
    path = os.path.join(release_dir, 'weights.npz')
    with np.load(path) as stored:
      values = dict(stored)
    values['weight_0000'] = values['weight_0000'] + np.float16(0.01)
    with open(path, 'wb') as f:
      np.savez(f, **values)
    with self.assertRaisesRegex(ValueError, r'weights\.npz has sha256 .* but release\.json says'):
      releases.unpack(release_dir, os.path.join(tempfile.mkdtemp(dir=self.work_dir), 'unpacked'))

  def test_a_release_of_another_layout_names_the_first_difference(self):
    release_dir, _ = self._release('teams_layout')
    path = os.path.join(release_dir, releases.RELEASE_FILE)
    release = releases.read_release(release_dir)
    release['weights'][3][1] = [7, 7]
    with open(path, 'w') as f:
      json.dump(release, f)
    with self.assertRaisesRegex(ValueError, r'first difference is at weight 3: .*\[7, 7\]'):
      releases.unpack(release_dir, os.path.join(tempfile.mkdtemp(dir=self.work_dir), 'unpacked'))

  def test_a_taco_run_packs_though_its_negatives_need_two_sequences(self):
    run_dir = os.path.join(self.work_dir, 'taco')
    utils.write_taco_pretraining_run(run_dir, utils.copy_sample_vocab(self.work_dir),
                                     seq_length=24, step=_STEP)
    release_dir = os.path.join(tempfile.mkdtemp(dir=self.work_dir), 'taco_seed1')
    release = releases.pack(run_dir, release_dir, train_flops=5e12,
                            about=dict(experiment='taco_tiny'))
    self.assertEqual(_STEP, release['step'])
    model_dir = os.path.join(tempfile.mkdtemp(dir=self.work_dir), 'unpacked')
    releases.unpack(release_dir, model_dir)
    encoder, *_ = loaders.restore_pretrained_encoder(model_dir)
    original, *_ = loaders.restore_pretrained_encoder(run_dir)
    self.assertAllClose(original.weights[0].numpy(), encoder.weights[0].numpy(), rtol=1e-3,
                        atol=1e-6)

  def test_packing_twice_into_one_directory_is_refused(self):
    release_dir, _ = self._release('teams_twice')
    with self.assertRaisesRegex(ValueError, 'already holds a release'):
      releases.pack(self.run_dir, release_dir, train_flops=1.0)


if __name__ == '__main__':
  tf.test.main()
