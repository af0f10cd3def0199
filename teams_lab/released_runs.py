"""Pretraining runs kept as releases: the encoders the re-judged replication scores.

Each run is a learning-benchmark run (`learning.run_objective`: the shared Wikipedia records,
the corpus vocabulary, a budget in BERT-mini FLOPs, resumption from its own checkpoints) with an
explicit seed. When it ends, its directory `<release_root>/<name>/` gets its learning result
(`<objective>.json`: the held-out validation curve) and its release
(`teams_tf.training.releases`: the weights without optimizer state, params.yaml, vocabulary,
step, FLOPs and sha256), which is committed, so that every later number can be re-checked
without pretraining again.
"""

import json
import os
import re
import shutil
import statistics
from typing import Optional

from teams_lab import learning
from teams_lab import learning_data
from teams_tf.training import releases
from teams_tf.utils import file_hashes

# Training minutes of one run at the base budget on 2 AMD EPYC cores, for an objective with no
# release yet: bert_seed1 73 (9,000 steps), TEAMS-mini 115 (5,939 steps at 0.86 steps/s, measured
# 2026-12-02), electra_seed1 170 (7,498 steps, beside other jobs).
PRETRAINING_MINUTES = (70, 170)


def run_name(objective: str, seed: int, bert_steps: int) -> str:
  """`<objective>_seed<seed>`, with `_<k>x` after the objective for k times the base budget."""
  multiple = bert_steps / learning.BERT_STEPS
  budget = '' if bert_steps == learning.BERT_STEPS else f'_{multiple:g}x'
  return f'{objective}{budget}_seed{seed}'


def releases_in(release_root: str) -> dict[str, dict]:
  """Release name -> its release.json, for every release under `release_root`."""
  found = {}
  if not os.path.isdir(release_root):
    return found
  for name in sorted(os.listdir(release_root)):
    path = os.path.join(release_root, name, 'release.json')
    if os.path.exists(path):
      with open(path) as f:
        found[name] = json.load(f)
  return found


_RUN = re.compile(r'^(?P<objective>.+?)(?P<budget>_[0-9.]+x)?_seed(?P<seed>[0-9]+)$')


def parse_run(name: str) -> tuple[str, str, int]:
  """'coco_lm_3x_seed2' -> ('coco_lm', '_3x', 2): a release's objective, budget, seed
  (`run_name`)."""
  match = _RUN.match(name)
  if not match:
    raise ValueError(f'{name!r} is not a release name <objective>[_<k>x]_seed<seed>.')
  return match['objective'], match['budget'] or '', int(match['seed'])


def _measured_minutes(objective: str, found: dict[str, dict]) -> Optional[float]:
  """Median training minutes of the base-budget releases of `objective` in `found`."""
  minutes = [release['about']['held_out']['train_seconds'] / 60
             for name, release in found.items()
             if parse_run(name)[:2] == (objective, '')
             and release.get('about', {}).get('held_out', {}).get('train_seconds')]
  return statistics.median(minutes) if minutes else None


def outlook(names: list[str], release_root: str, bert_steps: int) -> str:
  """What releasing `names` will run and about how long it will take, printed first.

  A run's minutes are those its objective's base-budget releases took (scaled by the budget), or
  `PRETRAINING_MINUTES` for an objective not yet released.
  """
  todo = [name for name in names if not releases.is_release(os.path.join(release_root, name))]
  if not todo:
    return f'Every run is released in {release_root}; nothing to train.'
  scale = bert_steps / learning.BERT_STEPS
  found = releases_in(release_root)
  low = high = 0.0
  for name in todo:
    measured = _measured_minutes(parse_run(name)[0], found)
    low += (measured or PRETRAINING_MINUTES[0]) * scale
    high += (measured or PRETRAINING_MINUTES[1]) * scale
  hours = f'{low / 60:.1f}' if low == high else f'{low / 60:.1f} to {high / 60:.1f}'
  return (f'This pretrains {len(todo)} of {len(names)} run(s) ({", ".join(todo)}): about '
          f'{hours} hours of training on 2 cores (each as long as its '
          f'objective\'s releases took, or {PRETRAINING_MINUTES[0]} to '
          f'{PRETRAINING_MINUTES[1]} minutes at the base budget), after the records are written '
          'once (a few minutes); a run resumes from its checkpoints in --work_dir if '
          'interrupted, but those go when the machine does: start a run where it can finish.')


def reuse_vocabulary(work_dir: str, release_root: str, log=print) -> Optional[str]:
  """Copies the releases' corpus vocabulary into `work_dir`, where `learning_data.prepare_data`
  finds it, instead of learning it again (about 25 minutes on 2 cores).

  Every release is trained with the one vocabulary learned from wiki_00-48, so a new run that
  shares it is comparable with them even if the vocabulary learner has changed since. The copy's
  sha256 is checked against the release's.

  Returns:
    The path in `work_dir`, or None when it was there already or no release has a vocabulary.

  Raises:
    ValueError: the releases disagree on their vocabulary, or a release's vocab.txt does not
      match its recorded sha256.
  """
  target = learning_data.vocab_path(work_dir, learning.VOCAB_SIZE)
  found = {name: release for name, release in releases_in(release_root).items()
           if 'vocab.txt' in release.get('sha256', {})}
  if os.path.exists(target) or not found:
    return None
  hashes = {release['sha256']['vocab.txt'] for release in found.values()}
  if len(hashes) > 1:
    raise ValueError(f'the releases in {release_root} have {len(hashes)} different vocabularies; '
                     f'put the one to train with at {target}.')
  name = next(iter(found))
  source = os.path.join(release_root, name, 'vocab.txt')
  if file_hashes.sha256(source) != hashes.pop():
    raise ValueError(f'{source} does not match the sha256 in its release.json; restore it '
                     '(git checkout) before training with it.')
  os.makedirs(work_dir, exist_ok=True)
  shutil.copyfile(source, target)
  log(f'corpus vocabulary: {source} (every release\'s) -> {target}')
  return target


def release_run(objective: str, seed: int, bert_steps: int, corpus_dir: str, work_dir: str,
                release_root: str, log=print) -> Optional[dict]:
  """Pretrains (or resumes) one run and releases it; returns its release.json (None: failed).

  A run already released is not trained again.

  Args:
    objective: one of `learning.OBJECTIVES` (or a mini variant, `learning.mini_runs`).
    seed: `teams_tf.train --seed`.
    bert_steps: the budget in BERT-mini steps.
    corpus_dir, work_dir: as for `learning.default_setup`; run directories go to `work_dir`.
    release_root: the release goes to `<release_root>/<run_name>/`.

  Raises:
    ValueError: a corpus directory without its files, or a result file of other settings.
  """
  name = run_name(objective, seed, bert_steps)
  release_dir = os.path.join(release_root, name)
  if releases.is_release(release_dir):
    log(f'{name}: released ({release_dir}); skipping')
    return releases.read_release(release_dir)
  reuse_vocabulary(work_dir, release_root, log)
  setup, flops = learning.default_setup(corpus_dir, work_dir, release_dir, learning.VOCAB_SIZE,
                                        bert_steps, learning.VALIDATION_INTERVAL, seed)
  result = learning.run_objective(objective, setup, flops[objective], log)
  if result is None or not result['curve']:
    return None
  model_dir = learning.final_run_dir(setup, objective, result)
  last = result['curve'][-1]
  release = releases.pack(model_dir, release_dir, train_flops=last['flops'], about=dict(
      objective=objective, experiment=result['experiment'], seed=seed, bert_steps=bert_steps,
      held_out={k: v for k, v in last.items() if k not in ('step', 'flops')},
      machine=result['machine']))
  log(f'{name}: released step {release["step"]:,} ({release["num_parameters"]:,} weights, '
      f'{release["dtype"]}) to {release_dir}')
  return release
