"""Releasing runs: the outlook printed first, and the shared corpus vocabulary reused."""

import hashlib
import json
import os
import tempfile

import tensorflow as tf

from teams_lab import learning
from teams_lab import released_runs


def _write_release(root, name, vocab_text='[PAD]\n[UNK]\nthe\n', train_seconds=3600.0):
  directory = os.path.join(root, name)
  os.makedirs(directory)
  with open(os.path.join(directory, 'vocab.txt'), 'w') as f:
    f.write(vocab_text)
  release = dict(step=10, sha256={'vocab.txt': hashlib.sha256(vocab_text.encode()).hexdigest()},
                 about=dict(held_out=dict(train_seconds=train_seconds)))
  with open(os.path.join(directory, 'release.json'), 'w') as f:
    json.dump(release, f)
  return directory


class ReleasedRunsTest(tf.test.TestCase):

  def setUp(self):
    super().setUp()
    self.root = tempfile.mkdtemp()
    self.releases = os.path.join(self.root, 'encoders')
    self.work_dir = os.path.join(self.root, 'work')

  def test_outlook_times_a_run_by_its_objectives_releases(self):
    _write_release(self.releases, 'bert_seed1', train_seconds=60 * 60)
    # bert_seed2 as long as bert_seed1 (60 minutes); teams (never released) 70 to 170.
    text = released_runs.outlook(['bert_seed1', 'bert_seed2', 'teams_seed1'], self.releases,
                                 learning.BERT_STEPS)
    self.assertIn('2 of 3 run(s) (bert_seed2, teams_seed1): about 2.2 to 3.8 hours', text)
    # A three-times budget takes three times as long.
    self.assertIn('(bert_3x_seed1): about 3.0 hours', released_runs.outlook(
        ['bert_3x_seed1'], self.releases, 3 * learning.BERT_STEPS))

  def test_a_new_run_trains_with_the_releases_vocabulary(self):
    self.assertIsNone(released_runs.reuse_vocabulary(self.work_dir, self.releases, log=print))
    source = _write_release(self.releases, 'bert_seed1')
    _write_release(self.releases, 'electra_seed1')
    target = released_runs.reuse_vocabulary(self.work_dir, self.releases, log=lambda _: None)
    self.assertEqual(os.path.join(self.work_dir, 'vocab_8192.txt'), target)
    with open(target) as f:
      self.assertEqual('[PAD]\n[UNK]\nthe\n', f.read())
    # One already in the work directory is kept.
    self.assertIsNone(released_runs.reuse_vocabulary(self.work_dir, self.releases, log=print))
    # An edited vocab.txt is not trained with.
    os.remove(target)
    with open(os.path.join(source, 'vocab.txt'), 'a') as f:
      f.write('a\n')
    with self.assertRaisesRegex(ValueError, 'does not match the sha256 in its release.json'):
      released_runs.reuse_vocabulary(self.work_dir, self.releases, log=print)

  def test_releases_of_two_vocabularies_are_refused(self):
    _write_release(self.releases, 'bert_seed1')
    _write_release(self.releases, 'teams_seed1', vocab_text='[PAD]\nother\n')
    with self.assertRaisesRegex(ValueError, '2 different vocabularies; put the one to train '
                                'with at'):
      released_runs.reuse_vocabulary(self.work_dir, self.releases, log=print)


if __name__ == '__main__':
  tf.test.main()
