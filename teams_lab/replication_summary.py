"""The mini replication's results summarised: medians over seeds, and the rule against random init.

Per encoder and task: the dev headline metric of seed 1 at each learning rate, the rate it
chose, and the seeds at that rate (median, min, max). An encoder beats random init on a task
when its median gap is larger than both seed spreads; a pretraining run fails the rule when it
can no longer beat random init on `MIN_TASKS_BEATEN` tasks, and an encoder fails when any of its
pretraining runs does. `replication_report` writes these summaries as the report.
"""

import os

import numpy as np

from teams_lab import finetune_protocols
from teams_lab import replication

# A pretrained encoder is flagged when it beats random init on fewer tasks than this.
MIN_TASKS_BEATEN = 2


def task_summary(protocol, out_dir, encoder, task):
  """One encoder's seed-1 scores per rate, and its seeds at the chosen rate (`summarize`)."""
  rate = replication.choose_learning_rate(protocol, out_dir, encoder, task)
  seed_one = {finetune_protocols.format_rate(r): replication.read_unit(
      out_dir, replication.Unit(encoder, task, r, 1)) for r in protocol.learning_rates}
  entry = dict(learning_rate=rate, seed_one={r: None if result is None else
                                             replication.headline(result)
                                             for r, result in seed_one.items()})
  runs = [replication.read_unit(out_dir, replication.Unit(encoder, task, rate, seed))
          for seed in range(1, protocol.seeds + 1)]
  values = [replication.headline(result) for result in runs if result is not None]
  entry.update(values=values, complete=len(values) == protocol.seeds)
  if values:
    entry.update(median=float(np.median(values)), min=min(values), max=max(values))
  return entry


def beats(entry, floor):
  """Median gap larger than both seed spreads; None until both have every seed."""
  if not (entry['complete'] and floor['complete']):
    return None
  spread = max(entry['max'] - entry['min'], floor['max'] - floor['min'])
  return entry['median'] - floor['median'] > spread


def _pretraining_run(protocol, sweep_dir: str, encoder: str, entry: dict, floor: dict) -> dict:
  """One pretraining run of `encoder` as the sweep in `sweep_dir` fine-tuned it.

  Its random-init flags use `floor` (the main sweep's random-init tasks): random init does not
  depend on the pretraining run, so other sweeps fine-tune none of their own.
  """
  first = replication.read_unit(sweep_dir, replication.Unit(
      encoder, protocol.tasks[0], protocol.learning_rates[0], 1))
  settings = (first or {}).get('settings') or {}
  return dict(sweep=os.path.basename(os.path.normpath(sweep_dir)),
              pretraining_seed=settings.get('pretraining_seed'),
              medians={task: task_entry['median'] for task, task_entry in entry['tasks'].items()},
              beats_random={task: beats(task_entry, floor[task])
                            for task, task_entry in entry['tasks'].items()},
              average=entry['average']['median'])


def _sweep_summary(protocol: finetune_protocols.FineTuneProtocol, out_dir: str,
                   encoders=replication.ENCODERS) -> dict:
  """{encoder: {'tasks', 'average'}} of one sweep, as `summarize` documents them."""
  summary = {}
  for encoder in encoders:
    tasks = {task: task_summary(protocol, out_dir, encoder, task) for task in protocol.tasks}
    average = None
    if all(entry['complete'] for entry in tasks.values()):
      average = dict(median=float(np.mean([e['median'] for e in tasks.values()])),
                     spread=float(np.mean([e['max'] - e['min'] for e in tasks.values()])))
    summary[encoder] = dict(tasks=tasks, average=average)
  return summary


def summarize(protocol: finetune_protocols.FineTuneProtocol, out_dir: str, other_sweeps=(),
              random_init_dir=None) -> dict:
  """Every encoder's per-task entries, random-init flags and average over tasks.

  Args:
    protocol: the fine-tuning protocol of every sweep.
    out_dir: the sweep's committed unit results.
    other_sweeps: unit results of the same protocol over other pretraining runs of the encoders
      (`tools/replicate.py --pretraining_seed`'s --out_dir).
    random_init_dir: the sweep whose random-init units to compare with, when not `out_dir`
      (random init does not depend on the pretraining run, so a sweep of another run reuses
      the main sweep's).

  Returns:
    {encoder: {'tasks': {task: {'learning_rate' (None until chosen), 'seed_one' (rate ->
    headline or None), 'values' (seeds 1..N at the chosen rate), 'complete', and with values
    'median', 'min', 'max'}}, 'beats_random': {task: True, False or None (undecided)},
    'average': None until every task has every seed, else {'median': mean of the task medians,
    'spread': mean of the task min-max ranges, and with more than one pretraining run
    'pretraining_range': max - min of the runs' averages, 'runs_mean': their mean},
    'pretraining_runs': [{'sweep',
    'pretraining_seed', 'medians' (task -> median), 'beats_random' (against the random init
    above: this sweep's, or `random_init_dir`'s), 'average'}] of the complete runs, this sweep's
    first}}, scores in [-1, 1].
  """
  if random_init_dir:
    summary = _sweep_summary(protocol, out_dir, [e for e in replication.ENCODERS
                                                 if e != replication.RANDOM])
    summary.update(_sweep_summary(protocol, random_init_dir, (replication.RANDOM,)))
  else:
    summary = _sweep_summary(protocol, out_dir)
  floor = summary[replication.RANDOM]['tasks']
  others = [(sweep, _sweep_summary(protocol, sweep)) for sweep in other_sweeps]
  for encoder, entry in summary.items():
    entry['beats_random'] = ({} if encoder == replication.RANDOM else
                             {task: beats(task_entry, floor[task])
                              for task, task_entry in entry['tasks'].items()})
    runs = [(out_dir, entry)] + [(sweep, other[encoder]) for sweep, other in others]
    entry['pretraining_runs'] = [_pretraining_run(protocol, sweep, encoder, run, floor)
                                 for sweep, run in runs if run['average'] is not None]
    if entry['average'] is not None and len(entry['pretraining_runs']) > 1:
      averages = [run['average'] for run in entry['pretraining_runs']]
      entry['average']['pretraining_range'] = max(averages) - min(averages)
      entry['average']['runs_mean'] = sum(averages) / len(averages)
  return summary


def _tasks_needed(beats_random: dict) -> int:
  """How many tasks a pretraining run must beat random init on: MIN_TASKS_BEATEN, or all."""
  return min(MIN_TASKS_BEATEN, len(beats_random))


def _fails(beats_random: dict) -> bool:
  """Whether one pretraining run cannot beat random init on MIN_TASKS_BEATEN tasks any more."""
  flags = list(beats_random.values())
  return flags.count(True) + flags.count(None) < _tasks_needed(beats_random)


def failing_runs(entry: dict) -> tuple[int, int]:
  """(How many of an encoder's pretraining runs fail the rule, how many are counted).

  Counted: the complete runs, and this sweep's run while still incomplete once it already fails.
  """
  runs = [run['beats_random'] for run in entry['pretraining_runs']]
  if entry['average'] is None and _fails(entry['beats_random']):
    runs.append(entry['beats_random'])
  return sum(map(_fails, runs)), len(runs)


def not_beating_random(summary: dict) -> tuple[list[str], list[str]]:
  """(Encoders that cannot beat random init on MIN_TASKS_BEATEN tasks, those not decided yet).

  An encoder fails when any of its pretraining runs does: the rule asks it of the objective, so
  one run that passes does not outweigh another that fails.
  """
  failing, undecided = [], []
  for encoder, entry in summary.items():
    if encoder == replication.RANDOM:
      continue
    if failing_runs(entry)[0]:
      failing.append(encoder)
    elif list(entry['beats_random'].values()).count(True) < _tasks_needed(entry['beats_random']):
      undecided.append(encoder)
  return failing, undecided


def at_grid_top(protocol, summary: dict) -> list[tuple[str, str]]:
  """(encoder, task) pairs whose chosen rate is the grid's largest: their optimum may lie above."""
  top = max(protocol.learning_rates)
  return [(encoder, task) for encoder, entry in summary.items()
          for task, task_entry in entry['tasks'].items() if task_entry['learning_rate'] == top]
