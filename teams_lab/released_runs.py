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
from typing import Optional

from teams_lab import learning
from teams_tf.training import releases

# Minutes of one run at the base budget on 2 cores, training and held-out evaluations
# (benchmarks/replication/replication.md: 39.8 to 55.0).
PRETRAINING_MINUTES = (40, 55)


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


def outlook(names: list[str], release_root: str, bert_steps: int) -> str:
  """What releasing `names` will run and about how long it will take, printed first."""
  todo = [name for name in names if not releases.is_release(os.path.join(release_root, name))]
  if not todo:
    return f'Every run is released in {release_root}; nothing to train.'
  scale = bert_steps / learning.BERT_STEPS
  low, high = (len(todo) * minutes * scale / 60 for minutes in PRETRAINING_MINUTES)
  return (f'This pretrains {len(todo)} of {len(names)} run(s) ({", ".join(todo)}), each '
          f'{PRETRAINING_MINUTES[0] * scale:.0f} to {PRETRAINING_MINUTES[1] * scale:.0f} minutes '
          f'on 2 cores ({low:.1f} to {high:.1f} hours in all), after building the corpus '
          'vocabulary and records once (about 15 minutes); a run resumes from its checkpoints '
          'if interrupted.')


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
