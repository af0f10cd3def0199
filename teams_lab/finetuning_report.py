"""The report of the released encoders' fine-tuning (`release_finetuning`), from committed units.

Per protocol (`<out_dir>/<protocol>/`) and group, each encoder's dev headline metric per task at
its chosen rate: the median over fine-tuning seeds, their range, and a 95% interval of the mean
over seeds from a bootstrap over dev examples (the seeds' predictions rescored on each resample:
what another draw of dev sentences could give). Each encoder's gap to random init (seed means)
comes with a paired bootstrap interval (the same resamples for both) and counts as real only when
its interval is above 0 and the gap exceeds the fine-tuning seed spread of both sides and, where
a second pretraining run exists, the spread between the two runs. The floors say whether the
protocol has the range to see pretraining at all: random init's SST-2 and STS-B medians, CoLA
runs that predict one class, STS-B runs no better than predicting the mean (dev R^2 <= 0), and of
those the ones whose predictions are nearly constant (a collapse onto the mean rather than a weak
fit).
"""

import os
from typing import Callable, Optional

import numpy as np

from teams_lab import finetune_protocols
from teams_lab import probing
from teams_lab import release_finetuning
from teams_lab import replication
from teams_tf.utils import atomic_files

BOOTSTRAP_DRAWS = 1000
# Floors of the protocol, from issue 55: random init must reach these dev medians.
FLOORS = {'sst2': 0.78, 'stsb': 0.55}
# An STS-B run predicts 'nearly a constant' when its dev predictions' standard deviation is under
# this fraction of the labels'.
CONSTANT_PREDICTION_STD = 0.1
# (task, result, [D, N] dev indices) -> [D] headline metrics (`glue_metrics.resampled_headlines`).
Resample = Callable[[str, dict, np.ndarray], np.ndarray]


def _group_order(group: str) -> tuple[bool, str]:
  """The base budget's groups ('seed1', ...) before the ladder's ('3x_seed1', ...)."""
  return ('x_' in group, group)


def _groups(protocol_dir: str) -> list[str]:
  if not os.path.isdir(protocol_dir):
    return []
  names = [name for name in os.listdir(protocol_dir)
           if os.path.isdir(os.path.join(protocol_dir, name))]
  return sorted(names, key=_group_order)


def seed_results(protocol: finetune_protocols.FineTuneProtocol, group_dir: str, encoder: str,
                 task: str) -> tuple[Optional[float], list[dict]]:
  """(chosen rate, the committed results of seeds 1..N at it); (None, []) before it is chosen."""
  rate = replication.choose_learning_rate(protocol, group_dir, encoder, task)
  if rate is None:
    return None, []
  results = [replication.read_unit(group_dir, replication.Unit(encoder, task, rate, seed))
             for seed in range(1, protocol.seeds + 1)]
  return rate, [result for result in results if result is not None]


def r_squared(result: dict) -> float:
  """1 - dev MSE / dev label variance of a regression run: <= 0 is no better than the mean."""
  predictions = np.asarray(result['dev_predictions'], np.float64)
  labels = np.asarray(result['dev_labels'], np.float64)
  return float(1 - np.mean((predictions - labels) ** 2) / np.var(labels))


def relative_prediction_std(result: dict) -> float:
  """Standard deviation of a regression run's dev predictions over its labels': near 0 is a
  constant prediction, near the Pearson correlation is a calibrated one."""
  return float(np.std(result['dev_predictions']) / np.std(result['dev_labels']))


def _cell(task: str, results: list[dict], indices: np.ndarray, resample: Resample) -> dict:
  values = [replication.headline(result) for result in results]
  draws = np.mean([resample(task, result, indices) for result in results], axis=0)
  cell = dict(seeds=len(values), values=values, median=float(np.median(values)),
              mean=float(np.mean(values)), spread=float(max(values) - min(values)),
              interval=[float(v) for v in np.percentile(draws, [2.5, 97.5])], draws=draws)
  if task == 'stsb':
    cell['r_squared'] = [r_squared(result) for result in results]
    cell['relative_prediction_std'] = [relative_prediction_std(result) for result in results]
  else:
    cell['single_class_runs'] = sum(result.get('predicted_classes') == 1 for result in results)
  return cell


def _indices(results: list[dict], seed: int) -> np.ndarray:
  examples = len(results[0]['dev_labels'])
  return np.random.default_rng(seed).integers(0, examples, (BOOTSTRAP_DRAWS, examples))


def finished_cells(out_dir: str, protocol_name: str,
                   resample: Resample) -> tuple[dict[tuple[str, str, str], dict], list[str]]:
  """Every finished cell, (group, encoder, task) -> its seeds' statistics and `draws`, and the
  groups found.

  `draws` [BOOTSTRAP_DRAWS] are the seed mean on dev resamples that are the same for every cell
  of a task, so that two cells' draws subtract into a paired interval of their gap.
  """
  protocol = finetune_protocols.PROTOCOLS[protocol_name]
  protocol_dir = os.path.join(out_dir, protocol_name)
  found = {}
  indices = {}
  groups = _groups(protocol_dir)
  for group in groups:
    group_dir = os.path.join(protocol_dir, group)
    for encoder in sorted(os.listdir(group_dir)):
      if not os.path.isdir(os.path.join(group_dir, encoder)):
        continue
      for task_index, task in enumerate(protocol.tasks):
        rate, results = seed_results(protocol, group_dir, encoder, task)
        if not results or 'dev_predictions' not in results[0]:
          continue
        if task not in indices:
          indices[task] = _indices(results, task_index)
        # Only a cell with all its seeds has a seed spread that a gap can be judged against.
        found[(group, encoder, task)] = dict(_cell(task, results, indices[task], resample),
                                             learning_rate=rate,
                                             complete=len(results) == protocol.seeds)
  return found, groups


def rows(out_dir: str, protocol_name: str, resample: Resample) -> list[dict]:
  """One row per (group, encoder) with finished seeds on some task; see the module docstring."""
  protocol = finetune_protocols.PROTOCOLS[protocol_name]
  cells, groups = finished_cells(out_dir, protocol_name, resample)
  random = {task: cells.get((release_finetuning.RANDOM_GROUP, replication.RANDOM, task))
            for task in protocol.tasks}
  found = []
  for group, encoder in sorted({key[:2] for key in cells},
                               key=lambda key: (_group_order(key[0]),
                                                key[1] == replication.RANDOM, key[1])):
    row = dict(group=group, encoder=encoder, tasks={})
    for task in protocol.tasks:
      cell = cells.get((group, encoder, task))
      if cell is None:
        continue
      base = random[task]
      if base is not None and encoder != replication.RANDOM:
        gap_draws = cell['draws'] - base['draws']
        cell['gap'] = cell['mean'] - base['mean']
        cell['gap_interval'] = [float(v) for v in np.percentile(gap_draws, [2.5, 97.5])]
        budget = release_finetuning.group_budget(group)
        others = [cells[(other, encoder, task)]['mean'] for other in groups
                  if other != group and release_finetuning.group_budget(other) == budget
                  and (other, encoder, task) in cells]
        cell['pretraining_spread'] = (float(max(abs(cell['mean'] - m) for m in others))
                                      if others else None)
        cell['real'] = bool(cell['complete'] and base['complete'] and
                            cell['gap_interval'][0] > 0 and
                            cell['gap'] > max(cell['spread'], base['spread'],
                                              cell['pretraining_spread'] or 0.0))
      row['tasks'][task] = {key: value for key, value in cell.items() if key != 'draws'}
    found.append(row)
  return found


def floors(found: list[dict]) -> dict:
  """What the protocol's floors say over `rows`: random init's medians against `FLOORS`, BERT
  CoLA runs predicting one class, STS-B runs at R^2 <= 0 per row with their predictions' spread
  relative to the labels' and the count of nearly constant ones (of all encoders)."""
  random = next((row for row in found if row['encoder'] == replication.RANDOM), None)
  checks = {}
  for task, floor in FLOORS.items():
    median = random and random['tasks'].get(task, {}).get('median')
    checks[f'random_init_{task}'] = dict(floor=floor, median=median,
                                         met=None if median is None else median >= floor)
  bert = [row['tasks']['cola'] for row in found
          if row['encoder'] == 'bert' and 'cola' in row['tasks']]
  checks['bert_cola_single_class_runs'] = sum(cell['single_class_runs'] for cell in bert)
  poor = []
  for row in found:
    cell = row['tasks'].get('stsb')
    if cell is None:
      continue
    spreads = [std for r2, std in zip(cell['r_squared'], cell['relative_prediction_std'])
               if r2 <= 0]
    if spreads:
      poor.append(dict(group=row['group'], encoder=row['encoder'], runs=len(spreads),
                       seeds=cell['seeds'], relative_prediction_std=spreads))
  checks['stsb_runs_at_r2_le_0'] = dict(
      total=sum(item['runs'] for item in poor),
      nearly_constant=sum(std < CONSTANT_PREDICTION_STD
                          for item in poor for std in item['relative_prediction_std']),
      rows=poor)
  return checks


# The frozen probes beside the fine-tuning (`tools/probe_encoders.py --releases`): task, pooling.
PROBES = (('sst2', 'mean'), ('cola', 'mean'), ('stsb', 'pair'))


def _probe_lines(out_dir: str) -> list[str]:
  """The probes' rows found in `out_dir`: the embeddings (random init's: the bag-of-random-words
  floor) and each layer, per encoder."""
  lines = []
  for task, pooling in PROBES:
    report = probing.read_report(out_dir, task, pooling)
    if not report:
      continue
    if not lines:
      lines = ['', '## Frozen probes', '',
               'A linear model on frozen features of each encoder (`tools/probe_encoders.py '
               '--releases=all`): dev accuracy (SST-2, mean-pooled), Matthews correlation (CoLA, '
               'mean-pooled), Spearman correlation of a ridge regression on [|u - v|, u * v] of '
               'the two sentences\' means (STS-B) x 100; random init\'s embeddings column is the '
               'bag-of-random-words floor, its layers the random-layer floor.']
    lines += [''] + probing.table(report['scores'], f'{task} ({pooling})')
  return lines + _cosine_lines(out_dir)


def _cosine_lines(out_dir: str) -> list[str]:
  """Where the siamese STS-B head starts, from `tools/probe_encoders.py --pooling=cosine`."""
  report = probing.read_report(out_dir, 'stsb', 'cosine')
  if not report:
    return []
  name = probing.result_name('stsb', 'cosine')
  lines = ['', '## Where STS-B fine-tuning starts', '',
           "The last layer's untrained cos(u, v) of the two sentences' mean tokens, each "
           "sentence encoded alone, which the siamese head scales by 5: its dev Spearman "
           "correlation with the labels, and the mean cosine of unrelated pairs (near 100: every "
           "pair starts near 5), x 100 "
           f'([{name}.md](../{name}.md)).', '',
           '| encoder | Spearman of cos(u, v) | unrelated pairs\' cosine |', '|---|---:|---:|']
  lines += [f'| {encoder} | {100 * row[-1]:.1f} | '
            f'{100 * report["unrelated_cosine"][encoder][-1]:.1f} |'
            for encoder, row in report['scores'].items()]
  return lines


def _name(encoder: str) -> str:
  return replication.ENCODER_NAMES.get(encoder, encoder)


def _pct(value: Optional[float]) -> str:
  return '-' if value is None else f'{100 * value:.1f}'


def markdown(protocol_name: str, found: list[dict], command: str, out_dir: str) -> str:
  protocol = finetune_protocols.PROTOCOLS[protocol_name]
  names = {'sst2': 'SST-2 acc', 'cola': 'CoLA MCC', 'stsb': 'STS-B Spearman'}
  lines = [
      f'# Fine-tuning the released encoders: protocol `{protocol_name}`', '',
      f'`{command}`: dev headline metric x 100 of each release (benchmarks/encoders) and random '
      f'init, {protocol.seeds} fine-tuning seeds at the rate chosen by seed 1 '
      f'({"on a held-out train slice" if protocol.heldout_examples else "on dev"}) from '
      f'{", ".join(finetune_protocols.format_rate(r) for r in protocol.learning_rates)}; '
      f'{protocol.epochs:g} epochs; heads: '
      f'{", ".join(f"{t} {protocol.task_pooling(t)}" for t in protocol.tasks)}. '
      'Cell: median over seeds [min, max] (95% bootstrap interval of the seed mean over dev '
      'examples). Gap: seed mean minus random init\'s, paired 95% interval; **real** when the '
      'interval is above 0 and the gap exceeds both sides\' seed spread and the spread between '
      'two pretraining runs.', '',
      '| group | encoder | ' + ' | '.join(names[t] for t in protocol.tasks) + ' |',
      '|---|---|' + '---:|' * len(protocol.tasks)]
  for row in found:
    cells = []
    for task in protocol.tasks:
      cell = row['tasks'].get(task)
      cells.append('-' if cell is None else
                   f'{_pct(cell["median"])} [{_pct(min(cell["values"]))}, '
                   f'{_pct(max(cell["values"]))}] ({_pct(cell["interval"][0])}, '
                   f'{_pct(cell["interval"][1])})' +
                   ('' if cell['complete'] else
                    f', {cell["seeds"]} of {protocol.seeds} seeds'))
    lines.append(f'| {row["group"]} | {_name(row["encoder"])} | ' + ' | '.join(cells) + ' |')
  lines += ['', '## Gap to random init', '',
            '| group | encoder | ' + ' | '.join(names[t] for t in protocol.tasks) + ' |',
            '|---|---|' + '---:|' * len(protocol.tasks)]
  for row in found:
    if row['encoder'] == replication.RANDOM:
      continue
    cells = []
    for task in protocol.tasks:
      cell = row['tasks'].get(task)
      if cell is None or 'gap' not in cell:
        cells.append('-')
        continue
      text = (f'{100 * cell["gap"]:+.1f} ({100 * cell["gap_interval"][0]:+.1f} to '
              f'{100 * cell["gap_interval"][1]:+.1f})')
      cells.append(f'**{text}**' if cell['real'] else text)
    lines.append(f'| {row["group"]} | {_name(row["encoder"])} | ' + ' | '.join(cells) + ' |')
  lines += _probe_lines(out_dir)
  checks = floors(found)
  lines += ['', '## Floors', '']
  for task, floor in FLOORS.items():
    check = checks[f'random_init_{task}']
    verdict = {None: 'not run yet', True: 'met', False: 'not met'}[check['met']]
    lines.append(f'- random init {names[task]} median {_pct(check["median"])} against the floor '
                 f'{_pct(floor)}: {verdict}.')
  # Runs at the rates the sweep did not choose are not counted: they are not reported scores.
  lines.append('- BERT CoLA runs at the chosen rate predicting one class: '
               f'{checks["bert_cola_single_class_runs"]}.')
  poor = checks['stsb_runs_at_r2_le_0']

  def stds(values):
    low, high = f'{min(values):.2f}', f'{max(values):.2f}'
    return low if low == high else f'{low}-{high}'

  where = '; '.join(
      f'{item["group"]} {_name(item["encoder"])}: {item["runs"]} of {item["seeds"]}, predictions\' '
      f'std {stds(item["relative_prediction_std"])} of the labels\'' for item in poor['rows'])
  lines.append(f'- STS-B runs at the chosen rate no better than the mean (dev R^2 <= 0): '
               f'{poor["total"]}' + (f' ({where})' if where else '') + '; of them predicting '
               f'nearly a constant (std under {CONSTANT_PREDICTION_STD:.0%} of the labels\'): '
               f'{poor["nearly_constant"]}.')
  return '\n'.join(lines) + '\n'


def write_report(out_dir: str, protocol_name: str, resample: Resample, command: str) -> str:
  """Writes `<out_dir>/<protocol>/finetuning.md` and `.json`; returns the Markdown."""
  found = rows(out_dir, protocol_name, resample)
  text = markdown(protocol_name, found, command, out_dir)
  protocol_dir = os.path.join(out_dir, protocol_name)
  os.makedirs(protocol_dir, exist_ok=True)
  atomic_files.write_text(os.path.join(protocol_dir, 'finetuning.md'), text)
  atomic_files.write_json(os.path.join(protocol_dir, 'finetuning.json'),
                          dict(protocol=protocol_name, rows=found, floors=floors(found)))
  return text
