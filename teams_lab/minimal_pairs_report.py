"""BLiMP over the released encoders: every objective's methods beside random init and anchors.

Units, each one `teams-minimal-pairs` results file in `out_dir` (written when it ends, skipped
when present, so the table fills in across sessions):
  <release>.json                every method the release's pretrainer has (its MLM network's
                                masked PLLs, its kept encoder's one-pass score);
  <objective>_random_init_seed<k>.json
                                the same methods on fresh weights of that objective's shape,
                                seeded (`--random_init --seed=k`), one unit per pretraining seed;
  unigram.json                  add-one unigram frequencies of the training corpus under the
                                releases' vocabulary.
The report puts, per objective and method, the mean over paradigms of each pretraining run, of
random init, their gap with a paired bootstrap 95% interval (pairs resampled within each
paradigm, the same draws for both sides), and whether the gap is real: larger than the spread
between the two pretraining runs and than the spread between random init's two draws, and its
interval above 0. The unigram scorer and the BLiMP paper's models are the anchors.
"""

import collections
import dataclasses
import json
import os
import subprocess
import sys
from typing import Optional, Sequence

import numpy as np

from teams_lab import released_runs
from teams_tf.utils import atomic_files

UNIGRAM = 'unigram'
# Scoring methods in report order: the MLM network's, then the kept encoders' one-pass ones.
METHOD_ORDER = ('masked_lm', 'masked_lm_word_l2r', 'rtd', 'mws', 'self_critic', 'clm')
BOOTSTRAP_DRAWS = 1000


@dataclasses.dataclass(frozen=True)
class Unit:
  """One scoring run: `name` (its results file's stem) and its `teams-minimal-pairs` flags."""
  name: str
  flags: tuple[str, ...]


def plan(release_root: str, corpus_files: str) -> list[Unit]:
  """Every unit the releases under `release_root` call for.

  Random init takes its shape from the objective's first release, with one seed per
  pretraining seed of the objective, so that its spread is measured over as many draws.
  """
  names = list(released_runs.releases_in(release_root))
  units = [Unit(name, (f'--model_dir={os.path.join(release_root, name)}',)) for name in names]
  seeds = collections.defaultdict(set)
  shape = {}
  for name in names:
    objective, _, seed = released_runs.parse_run(name)
    seeds[objective].add(seed)
    shape.setdefault(objective, os.path.join(release_root, name))
  for objective in sorted(seeds):
    for seed in sorted(seeds[objective]):
      units.append(Unit(f'{objective}_random_init_seed{seed}',
                        (f'--model_dir={shape[objective]}', '--random_init', f'--seed={seed}')))
  if names:
    units.append(Unit(UNIGRAM, (f'--model_dir={os.path.join(release_root, names[0])}',
                                f'--unigram_corpus={corpus_files}')))
  return units


def result_path(out_dir: str, unit: Unit) -> str:
  return os.path.join(out_dir, f'{unit.name}.json')


# Minutes of a model unit before any has finished: two masked PLLs of a mini network over the
# 72,000 sentences (6.0 and 6.3 minutes for bert_seed1 alone on 2 Xeon cores, 2026-12-07) and
# its one-pass methods.
_UNIT_MINUTES = 13


def outlook(units: list[Unit], out_dir: str) -> str:
  """What a run of `units` will score and about how long it will take, printed first."""
  todo = [unit for unit in units if not os.path.exists(result_path(out_dir, unit))]
  if not todo:
    return f'Every unit is in {out_dir}; rewriting the report only.'
  # Every finished model unit of `out_dir`, not only this call's: a new release's units (its model
  # and random init) have none finished before they run.
  seconds = [sum(method['seconds'] for method in result['methods'].values())
             for name, result in load_results(out_dir).items() if name != UNIGRAM]
  minutes = np.mean(seconds) / 60 if seconds else _UNIT_MINUTES
  return (f'This scores {len(todo)} of {len(units)} unit(s) ({", ".join(u.name for u in todo)}), '
          f'about {minutes:.0f} minutes each on 2 cores ({len(todo) * minutes / 60:.1f} hours in '
          'all); --report_only rewrites the report from the finished units in seconds.')


def run_unit(unit: Unit, blimp_dir: str, out_dir: str, log=print) -> Optional[dict]:
  """Runs one unit in its own process (skipped when its file exists); returns its results."""
  path = result_path(out_dir, unit)
  if not os.path.exists(path):
    os.makedirs(out_dir, exist_ok=True)
    command = [sys.executable, '-m', 'teams_tf.cli.minimal_pairs', *unit.flags,
               f'--blimp_dir={blimp_dir}', f'--output={path}']
    log(f'{unit.name}: {" ".join(command[2:])}')
    with open(os.path.join(out_dir, f'{unit.name}.log'), 'w') as out:
      status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                              check=False).returncode
    if status:
      log(f'{unit.name}: teams-minimal-pairs exited with {status}; see '
          f'{os.path.join(out_dir, unit.name + ".log")}')
      return None
    os.remove(os.path.join(out_dir, f'{unit.name}.log'))
  with open(path) as f:
    return json.load(f)


def pair_bits(method_result: dict) -> dict[str, np.ndarray]:
  """Paradigm UID -> [pairs] bool, right or wrong, of one method's results."""
  return {uid: np.frombuffer(bits.encode(), np.uint8) == ord('1')
          for uid, bits in method_result['pairs'].items()}


def paired_bootstrap(a: Sequence[dict[str, np.ndarray]], b: Sequence[dict[str, np.ndarray]],
                     draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> tuple[float, float]:
  """95% interval of mean-over-paradigms accuracy, side `a` minus side `b`.

  Each side is one or more runs (their outcomes averaged per pair); pairs are resampled within
  each paradigm, with the same draws for both sides, so the interval is that of the gap on these
  sentences, not of either side alone.

  Args:
    a, b: runs, each paradigm UID -> [pairs] bool outcomes (`minimal_pairs.pair_outcomes`).
  """
  rng = np.random.default_rng(seed)
  gaps = np.zeros(draws)
  uids = sorted(a[0])
  for uid in uids:
    left = np.mean([run[uid] for run in a], axis=0)
    right = np.mean([run[uid] for run in b], axis=0)
    index = rng.integers(0, len(left), size=(draws, len(left)))
    gaps += (left[index] - right[index]).mean(axis=1)
  gaps /= len(uids)
  low, high = np.percentile(gaps, [2.5, 97.5])
  return float(low), float(high)


def _spread(means: list[float]) -> Optional[float]:
  """Largest minus smallest of two or more runs' means; None for one run."""
  return max(means) - min(means) if len(means) > 1 else None


def _rows(results: dict[str, dict]) -> list[dict]:
  """One row per (encoder: objective and budget, method): its pretrained runs and random init."""
  groups = collections.defaultdict(list)
  for name in results:
    if '_random_init_seed' not in name and name != UNIGRAM:
      objective, budget, _ = released_runs.parse_run(name)
      groups[(objective, budget)].append(name)
  rows = []
  for (objective, budget), names in sorted(groups.items()):
    random = [results[n] for n in sorted(results)
              if n.startswith(f'{objective}_random_init_seed')]
    for method in METHOD_ORDER:
      runs = [results[n]['methods'][method] for n in sorted(names)
              if method in results[n]['methods']]
      if not runs:
        continue
      baseline = [r['methods'][method] for r in random if method in r['methods']]
      row = dict(encoder=objective + budget, method=method, network=runs[0]['network'],
                 runs=[r['mean'] for r in runs], random_init=[r['mean'] for r in baseline],
                 phenomena={k: float(np.mean([r['phenomena'][k] for r in runs]))
                            for k in runs[0]['phenomena']})
      if baseline:
        spread, random_spread = _spread(row['runs']), _spread(row['random_init'])
        row.update(gap=float(np.mean(row['runs']) - np.mean(row['random_init'])),
                   interval=paired_bootstrap([pair_bits(r) for r in runs],
                                             [pair_bits(r) for r in baseline]),
                   spread=spread, random_spread=random_spread)
        row['real'] = (spread is not None and random_spread is not None
                       and row['gap'] > max(spread, random_spread) and row['interval'][0] > 0)
      rows.append(row)
  return rows


def _pct(value: Optional[float]) -> str:
  return '—' if value is None else f'{100 * value:.1f}'


def markdown(results: dict[str, dict], command: str, rows: Optional[list[dict]] = None) -> str:
  """The report: the table per objective and method, anchors, then phenomena.

  `rows` are `_rows(results)`, computed here when not given.
  """
  rows = _rows(results) if rows is None else rows
  any_result = next(iter(results.values()), None)
  # The BLiMP paper's models on these paradigms, as every unit's file records them.
  paper = {} if any_result is None else any_result.get('paper', {})
  pairs = '' if any_result is None else (
      f'{any_result["num_paradigms"]} paradigms, {any_result["num_pairs"]:,} pairs')
  lines = [
      '# BLiMP minimal pairs of the released mini encoders', '',
      f'`{command}`: every release in benchmarks/encoders scored with `teams-minimal-pairs` on '
      f'../shared/data/blimp ({pairs}; 36 of BLiMP\'s 67 paradigms, all 12 phenomena). A pair is '
      'right when the good sentence scores strictly higher; cells are the mean over paradigms '
      '(x 100). Random init: the same methods on fresh weights of the objective\'s shape, one '
      'seed per pretraining run. Gap: pretrained minus random init (means over runs), with a '
      'paired bootstrap 95% interval over pairs; real: the gap exceeds both the spread between '
      'the two pretraining runs and the spread between random init\'s two draws, and its '
      'interval is above 0. (The interval counts the sampling of sentences only; a draw of '
      'random weights prefers one form of a paradigm\'s pairs throughout, so two draws of the '
      'same shape can differ by points.)', '',
      '| encoder | method | network | pretraining runs | random init | gap (95% interval) | '
      'run spread | random-init spread | real |',
      '|---|---|---|---|---|---|---|---|---|']
  for row in rows:
    runs = ' / '.join(_pct(v) for v in row['runs'])
    random = ' / '.join(_pct(v) for v in row['random_init']) or 'not run yet'
    if 'gap' in row:
      gap = (f'{100 * row["gap"]:+.1f} ({100 * row["interval"][0]:+.1f} to '
             f'{100 * row["interval"][1]:+.1f})')
      spread = _pct(row['spread']) if row['spread'] is not None else 'one run'
      random_spread = (_pct(row['random_spread']) if row['random_spread'] is not None
                       else 'one draw')
      decided = row['spread'] is not None and row['random_spread'] is not None
      real = 'yes' if row['real'] else ('no' if decided else '—')
    else:
      gap = spread = random_spread = real = '—'
    lines.append(f'| {row["encoder"]} | {row["method"]} | {row["network"]} | {runs} | {random} '
                 f'| {gap} | {spread} | {random_spread} | {real} |')
  lines += ['', '## Anchors', '', '| scorer | mean over paradigms |', '|---|---|']
  if UNIGRAM in results:
    unigram = results[UNIGRAM]['methods'][UNIGRAM]
    lines.append(f'| {unigram["network"]} | {_pct(unigram["mean"])} |')
  for name, mean in paper.items():
    lines.append(f'| {name} | {_pct(mean)} |')
  lines.append('| chance | 50.0 |')
  if rows:
    phenomena = sorted(rows[0]['phenomena'])
    lines += ['', '## Per phenomenon (mean over the pretraining runs)', '',
              '| encoder | method | ' + ' | '.join(phenomena) + ' |',
              '|---|---|' + '---|' * len(phenomena)]
    for row in rows:
      lines.append(f'| {row["encoder"]} | {row["method"]} | '
                   + ' | '.join(_pct(row['phenomena'][p]) for p in phenomena) + ' |')
  return '\n'.join(lines) + '\n'


def load_results(out_dir: str) -> dict[str, dict]:
  """Unit name -> its finished results file, for every unit in `out_dir`."""
  results = {}
  for name in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:
    if name.endswith('.json') and name != 'minimal_pairs.json':
      with open(os.path.join(out_dir, name)) as f:
        results[name[:-len('.json')]] = json.load(f)
  return results


def write_report(out_dir: str, command: str) -> list[dict]:
  """Writes `minimal_pairs.md` and `.json` from the units in `out_dir`; returns the rows."""
  results = load_results(out_dir)
  rows = _rows(results)  # Once: every row runs a bootstrap.
  atomic_files.write_text(os.path.join(out_dir, 'minimal_pairs.md'),
                          markdown(results, command, rows))
  atomic_files.write_json(os.path.join(out_dir, 'minimal_pairs.json'), dict(rows=rows))
  return rows
