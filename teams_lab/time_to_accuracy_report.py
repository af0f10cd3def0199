"""The time-to-accuracy report: its result files as `time_to_accuracy.{md,json,png}`.

Per machine (the result files' subdirectories): for each implementation, the minutes to reach
each threshold of held-out MLM accuracy (the first crossing, interpolated linearly between the two
evaluations around it) and their ratio to teams_tf's on that machine; the headline is the fastest
peer against teams_tf. Then what each peer could not match, each run's curve, and one plot of
accuracy against minutes with every run.
"""

import json
import os
import re
from typing import Mapping, Optional, TypeVar

from teams_lab import time_to_accuracy
from teams_tf.utils import atomic_files

# Held-out MLM accuracies to reach (the issue's).
THRESHOLDS = (0.35, 0.40)
# teams_tf should reach each threshold this many times sooner than the fastest peer.
GOAL = 1.5
OURS = 'teams_tf'
_Value = TypeVar('_Value')


def preamble(setup: time_to_accuracy.Setup, command: str) -> str:
  """The report's title and the paragraph saying how its runs were made."""
  params = time_to_accuracy.recipe(setup)
  data = params.task.train_data
  encoder = params.task.model.encoder
  optimizer = params.trainer.optimizer_config
  return '\n'.join([
      '# Time to accuracy: teams_tf, Model Garden and Hugging Face on the same cores', '',
      f'`{command}`: each implementation pretrains the `{time_to_accuracy.EXPERIMENT}` recipe '
      f'({encoder.num_layers} layers, H {encoder.hidden_size}, vocabulary {setup.vocab_size:,}, '
      f'T {data.seq_length}, batch {data.global_batch_size}, {data.mask_rate:.0%} masking '
      f'80/10/10, AdamW at peak {optimizer.learning_rate.polynomial.initial_learning_rate:g} '
      f'with {optimizer.warmup.linear.warmup_steps} warmup steps and linear decay over the '
      'run\'s steps) on the unmasked records of wiki_00-48 of the shared Wikipedia extract, alone '
      'on the machine. The TEAMS pair trains '
      f'`{time_to_accuracy.TEAMS_EXPERIMENT}` (the same data, batch, masking and optimiser) with '
      'teams_tf and with Model Garden\'s `official/projects/teams`. Every checkpoint (one per '
      f'{setup.checkpoint_interval} steps) is scored afterwards on the same evaluation set: '
      'every sequence of wiki_49 masked once at '
      f'{params.task.validation_data.mask_rate:.0%} (80/10/10) by teams_tf\'s validation '
      'pipeline; a TEAMS checkpoint by its generator\'s MLM accuracy and by its discriminator\'s '
      'RTD AUC over every real token, its own generator\'s samples in the masked positions. '
      'Minutes run from the training command\'s launch to the checkpoint\'s writing '
      '(start-up, tracing and checkpoint writes count; scoring does not). PFLOPs are the '
      "recipe's analytic count (`teams_tf.training.experiment_flops`), the same for every "
      'implementation at a step. The TensorFlow implementations inherit the CPU kernels teams_tf '
      'sets for its processes (oneDNN on x86 CPUs, `teams_tf/utils/onednn.py`; runs before '
      '2026-12-07 had TensorFlow\'s default, which leaves oneDNN off on CPUs without '
      'AVX512_VNNI, AVX512_BF16 or AMX).'])


def minutes_to(curve: list[dict], threshold: float, metric: str = 'mlm_accuracy'
               ) -> Optional[float]:
  """Minutes at which `metric` first reaches `threshold`, or None if it never does.

  Interpolated linearly between the last evaluation below it and the first at or above it (from
  the first evaluation's minutes when that one is already there).
  """
  previous = None
  for row in curve:
    if row.get('minutes') is None:
      continue
    if row[metric] >= threshold:
      if previous is None:
        return row['minutes']
      share = (threshold - previous[metric]) / (row[metric] - previous[metric])
      return previous['minutes'] + share * (row['minutes'] - previous['minutes'])
    previous = row
  return None


def load_results(out_dir: str) -> dict[str, dict[str, dict]]:
  """Machine -> implementation -> result, from `<out_dir>/<machine key>/<implementation>.json`.

  Machines in the order of their keys, implementations in `IMPLEMENTATIONS` order.
  """
  machines = {}
  keys = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
  for key in keys:
    results = {}
    for name in time_to_accuracy.IMPLEMENTATIONS:
      path = os.path.join(out_dir, key, f'{name}.json')
      if os.path.exists(path):
        with open(path) as f:
          results[name] = json.load(f)
    if results:
      machines[next(iter(results.values()))['machine']] = results
  return machines


def _final(result: dict) -> dict:
  """A run's last evaluation: step, minutes, MLM accuracy (and RTD AUC), analytic GFLOP/s."""
  curve = result['curve']
  timed = [row for row in curve if row.get('minutes') is not None]
  return dict(
      final_accuracy=curve[-1]['mlm_accuracy'] if curve else None,
      final_rtd_auc=curve[-1].get('rtd_auc') if curve else None,
      final_step=curve[-1]['step'] if curve else None,
      final_minutes=timed[-1]['minutes'] if timed else None,
      # Sustained analytic throughput, start-up included: beside the machine's matmul peak,
      # how much faster any implementation of the same FLOPs could be.
      gflops_per_second=(timed[-1]['flops'] / (60 * timed[-1]['minutes']) / 1e9
                         if timed and timed[-1]['minutes'] > 0 else None))


def _pair(named: Mapping[str, _Value], experiment: str) -> dict[str, _Value]:
  """The entries of `named` (results, or IMPLEMENTATIONS) whose implementation runs `experiment`."""
  return {name: value for name, value in named.items()
          if time_to_accuracy.IMPLEMENTATIONS[name].experiment == experiment}


def _peers(names) -> list[str]:
  """The implementations among `names` that are not teams_tf's."""
  return [name for name in names if time_to_accuracy.IMPLEMENTATIONS[name].framework != OURS]


def summary(results: dict[str, dict]) -> dict:
  """Minutes to each threshold, their ratios to teams_tf, and the headline against the goal.

  Over the implementations of the MLM recipe (`time_to_accuracy.EXPERIMENT`). A ratio is peer
  minutes / teams_tf minutes (above 1: teams_tf is faster). A peer that never reached a threshold
  teams_tf reached is at least (its last minutes / ours) slower: its ratio is that bound, marked
  `lower_bound`.
  """
  rows = {}
  for name, result in _pair(results, time_to_accuracy.EXPERIMENT).items():
    rows[name] = dict(_final(result),
                      minutes={str(t): minutes_to(result['curve'], t) for t in THRESHOLDS})
  ours = rows.get(OURS)
  headline = {}
  for name, row in rows.items():
    row['ratio'] = {}
    for t in THRESHOLDS:
      key = str(t)
      theirs = row['minutes'][key]
      if ours is None or ours['minutes'][key] is None or name == OURS:
        continue
      if theirs is None:
        row['ratio'][key] = dict(value=row['final_minutes'] / ours['minutes'][key],
                                 lower_bound=True)
      else:
        row['ratio'][key] = dict(value=theirs / ours['minutes'][key], lower_bound=False)
  peers = _peers(rows)
  for t in THRESHOLDS:
    key = str(t)
    ratios = {name: rows[name]['ratio'][key] for name in peers if key in rows[name]['ratio']}
    if ratios:
      fastest = min(ratios, key=lambda name: ratios[name]['value'])
      headline[key] = dict(fastest_peer=fastest, **ratios[fastest],
                           met=ratios[fastest]['value'] >= GOAL)
  return dict(rows=rows, headline=headline, goal=GOAL)


TEAMS_OURS, TEAMS_PEER = 'teams_tf_teams', 'model_garden_teams'


def teams_summary(results: dict[str, dict]) -> dict:
  """The TEAMS pair: minutes of each to Model Garden TEAMS' final RTD AUC and generator accuracy.

  For each metric the target is the peer's value at its last checkpoint; each side's minutes are
  its first crossing of it (`minutes_to`), the ratio peer / ours (above 1: ours got there
  sooner; ours never reaching it is a ratio below 1, bounded by the peer's minutes over ours).
  """
  pair = _pair(results, time_to_accuracy.TEAMS_EXPERIMENT)
  rows = {name: _final(result) for name, result in pair.items()}
  targets = {}
  steps = {result.get('settings', {}).get('train_steps') for result in pair.values()}
  if len(steps) > 1:  # Schedules of other lengths: minutes to a value are not comparable.
    return dict(rows=rows, targets=targets, train_steps_differ=True)
  if TEAMS_OURS in pair and TEAMS_PEER in pair and pair[TEAMS_PEER]['curve']:
    last = pair[TEAMS_PEER]['curve'][-1]
    for metric in ('rtd_auc', 'mlm_accuracy'):
      ours = minutes_to(pair[TEAMS_OURS]['curve'], last[metric], metric)
      theirs = minutes_to(pair[TEAMS_PEER]['curve'], last[metric], metric)
      targets[metric] = dict(
          target=last[metric], ours=ours, peer=theirs,
          ratio=None if ours is None else theirs / ours,
          upper_bound=(theirs / rows[TEAMS_OURS]['final_minutes'] if ours is None else None))
  return dict(rows=rows, targets=targets, train_steps_differ=False)


def _minutes(value) -> str:
  return 'not reached' if value is None else f'{value:.1f}'


def _ratio(ratio) -> str:
  if not ratio:
    return '—'
  return f'{">" if ratio["lower_bound"] else ""}{ratio["value"]:.2f}'


def _signature_note(machine: str) -> list[str]:
  """A caveat for a machine name without the CPU signature `hardware.description` now adds."""
  if re.search(r'\(family ', machine):
    return []
  return ['This machine name predates the CPU signature (family, model, vector extensions): '
          'its runs may have trained on different CPU generations of that name, and their '
          'ratios may hold a CPU difference.', '']


def _teams_section(results: dict[str, dict]) -> list[str]:
  """The TEAMS pair's table on one machine, and its minutes to Model Garden TEAMS' final AUC."""
  numbers = teams_summary(results)
  if not numbers['rows']:
    return []
  lines = [f'### TEAMS pair (`{time_to_accuracy.TEAMS_EXPERIMENT}`)', '']
  names = {'rtd_auc': 'RTD AUC', 'mlm_accuracy': 'generator MLM accuracy'}
  for metric, target in numbers['targets'].items():
    value = (f'{target["target"]:.4f}' if metric == 'rtd_auc' else f'{target["target"]:.2%}')
    ratio = (f'{target["ratio"]:.2f}' if target['ratio'] is not None
             else f'<{target["upper_bound"]:.2f} (ours never got there)')
    lines.append(f'- Minutes to Model Garden TEAMS\' final {names[metric]} ({value}): '
                 f'teams_tf {_minutes(target["ours"])}, Model Garden {_minutes(target["peer"])}; '
                 f'peer minutes / teams_tf minutes **{ratio}**.')
  if numbers['train_steps_differ']:
    lines.append('- No ratio: the two runs trained to different steps (their schedules differ); '
                 'rerun one with the other\'s --train_steps.')
  if numbers['targets'] or numbers['train_steps_differ']:
    lines.append('')
  lines += ['| implementation | final generator MLM accuracy | final RTD AUC | steps | minutes | '
            'analytic GFLOP/s |', '|---|---|---|---|---|---|']
  for name, row in numbers['rows'].items():
    auc = '—' if row['final_rtd_auc'] is None else f'{row["final_rtd_auc"]:.4f}'
    lines.append(f'| {results[name]["description"]} | {row["final_accuracy"]:.2%} | {auc} | '
                 f'{row["final_step"]:,} | {_minutes(row["final_minutes"])} | '
                 f'{_minutes(row["gflops_per_second"])} |')
  return lines + ['']


def _machine_section(machine: str, results: dict[str, dict]) -> list[str]:
  """One machine's headline, its table of minutes and ratios, and the TEAMS pair's."""
  numbers = summary(results)
  lines = [f'## On {machine}', ''] + _signature_note(machine)
  if not numbers['rows']:
    return lines + _teams_section(results)
  if numbers['headline']:
    lines += [f'Goal: teams_tf at least {GOAL}x faster than the fastest peer to the same '
              'held-out accuracy.', '', '| threshold | fastest peer | peer minutes / teams_tf '
              'minutes | goal met |', '|---|---|---|---|']
    for key, head in numbers['headline'].items():
      lines.append(f'| {float(key):.0%} | {head["fastest_peer"]} | {_ratio(head)} | '
                   f'{"yes" if head["met"] else "**no**"} |')
    lines.append('')
  elif OURS not in numbers['rows']:
    lines += [f'No ratios: {OURS} has not run on this machine (`--implementations={OURS}`).', '']
  elif not _peers(numbers['rows']):
    command = ','.join(_peers(_pair(time_to_accuracy.IMPLEMENTATIONS, time_to_accuracy.EXPERIMENT)))
    lines += [f'No ratios: no peer has run on this machine yet (`--implementations={command}`).',
              '']
  lines += ['| implementation | ' + ' | '.join(f'minutes to {t:.0%}' for t in THRESHOLDS) +
            ' | ' + ' | '.join(f'ratio to teams_tf at {t:.0%}' for t in THRESHOLDS) +
            ' | final accuracy | steps | minutes | analytic GFLOP/s |',
            '|---' * (5 + 2 * len(THRESHOLDS)) + '|']
  for name, row in numbers['rows'].items():
    lines.append(
        f'| {results[name]["description"]} | ' +
        ' | '.join(_minutes(row['minutes'][str(t)]) for t in THRESHOLDS) + ' | ' +
        ' | '.join(_ratio(row['ratio'].get(str(t))) for t in THRESHOLDS) +
        f' | {row["final_accuracy"]:.2%} | {row["final_step"]:,} | '
        f'{_minutes(row["final_minutes"])} | {_minutes(row["gflops_per_second"])} |')
  return lines + [''] + _teams_section(results)


def markdown(machines: dict[str, dict[str, dict]], preamble: str) -> str:
  """The report: per machine its headline and table; what was not matched; every run's curve."""
  lines = [preamble, '', 'Runs, minutes and ratios are per machine: minutes taken on different '
           'CPUs are not compared.', '']
  for machine, results in machines.items():
    lines += _machine_section(machine, results)
  lines += ['A ratio above 1: teams_tf got there sooner; ">": the peer never got there, '
            'and its ratio is at least its whole run over teams_tf\'s minutes. Analytic GFLOP/s: '
            'the recipe\'s training FLOPs at the last checkpoint over its minutes.', '',
            '## What each implementation could not match', '']
  described = {}
  for results in machines.values():
    described.update(results)
  for name, result in described.items():
    unmatched = result['unmatched'] or ['nothing: the recipe as teams_tf runs it']
    lines.append(f'- **{result["description"]}**: ' + '; '.join(unmatched) + '.')
  for machine, results in machines.items():
    for name, result in results.items():
      auc = any('rtd_auc' in row for row in result['curve'])
      lines += ['', f'## {result["description"]}, on {machine}', '',
                f'`{" ".join(result["commands"][-1])}`' if result['commands']
                else 'Command not recorded.', '',
                '| step | minutes | PFLOPs | held-out MLM accuracy |'
                + (' RTD AUC |' if auc else ''),
                '|---|---|---|---|' + ('---|' if auc else '')]
      for row in result['curve']:
        lines.append(f'| {row["step"]:,} | {_minutes(row.get("minutes"))} | '
                     f'{row["flops"] / 1e15:.3f} | {row["mlm_accuracy"]:.2%} |'
                     + (f' {row["rtd_auc"]:.4f} |' if auc else ''))
  return '\n'.join(lines) + '\n'


def plot(machines: dict[str, dict[str, dict]], path: str) -> None:
  """Held-out MLM accuracy against minutes, every run on one figure.

  A colour per implementation and a line style per machine; the legend goes below the panels,
  where the machines' long names cover no curve.

  With TEAMS-pair runs, a second panel gives their RTD AUC against minutes.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  teams = any(_pair(results, time_to_accuracy.TEAMS_EXPERIMENT) for results in machines.values())
  figure, axes = pyplot.subplots(1, 2 if teams else 1, figsize=(12.0 if teams else 6.4, 4.2),
                                 squeeze=False)
  styles = ('-', '--', ':', '-.')
  names = list(dict.fromkeys(name for results in machines.values() for name in results))
  for index, (machine, results) in enumerate(machines.items()):
    for name, result in results.items():
      rows = [row for row in result['curve'] if row.get('minutes') is not None]
      label = name if len(machines) == 1 else f'{name}, {machine}'
      minutes = [row['minutes'] for row in rows]
      style = dict(marker='.', linestyle=styles[index % len(styles)], label=label,
                   color=f'C{names.index(name) % 10}')
      axes[0][0].plot(minutes, [row['mlm_accuracy'] for row in rows], **style)
      if teams and name in _pair(results, time_to_accuracy.TEAMS_EXPERIMENT):
        axes[0][1].plot(minutes, [row['rtd_auc'] for row in rows], **style)
  for threshold in THRESHOLDS:
    axes[0][0].axhline(threshold, color='gray', linestyle=':', linewidth=1)
  # Two lines: one would be taller than the 4.2-inch panel and lose its ends.
  axes[0][0].set_ylabel('held-out MLM accuracy\n(15% masked; TEAMS: its generator)')
  if teams:
    axes[0][1].set_ylabel('TEAMS RTD AUC on the held-out set')
  for axis in axes[0]:
    axis.set_xlabel('minutes from launch')
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc='upper center', bbox_to_anchor=(0.5, -0.16))
  figure.tight_layout()
  figure.savefig(path, dpi=100, bbox_inches='tight')
  pyplot.close(figure)


def write_report(out_dir: str, preamble: str) -> dict[str, dict[str, dict]]:
  """Writes time_to_accuracy.{md,json,png} into `out_dir` from the result files under it."""
  machines = load_results(out_dir)
  atomic_files.write_text(os.path.join(out_dir, 'time_to_accuracy.md'),
                          markdown(machines, preamble))
  atomic_files.write_json(os.path.join(out_dir, 'time_to_accuracy.json'), dict(
      goal=GOAL, machines={machine: dict(summary(results), teams=teams_summary(results),
                                         results=results)
                           for machine, results in machines.items()}))
  if machines:
    plot(machines, os.path.join(out_dir, 'time_to_accuracy.png'))
  return machines
