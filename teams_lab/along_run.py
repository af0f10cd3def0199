"""One pretraining run fine-tuned at checkpoints along it: how GLUE moves as pretraining goes on.

The replication (`replication.py`) fine-tunes each run's last checkpoint. That says where an
objective stands at the budget, not whether its encoder is still improving or has yet to start
helping, which is what decides whether a larger budget would change the table. A run that kept
every checkpoint (`tools/benchmark_learning.py --keep_checkpoints`) is fine-tuned here at
earlier steps under the replication's `FineTuneProtocol`, at the learning rate the replication
chose per task for the run's last checkpoint, seeds 1..N at it: a row differs from the
replication's only in how long the encoder was pretrained. The last checkpoint's row is the
replication's own units and the step-0 row its random-init units; neither is run again. A unit
is one (step, task, seed) of the Model Garden sweep (`replication.run_unit`); its result goes to
`<out_dir>/step_<N>/<encoder>/<task>_lr<rate>_seed<k>.json`, its sweep runs in
`<work_dir>/along_step_<N>/`, and a unit with a result is never run again.
"""

import dataclasses
import os
import re
import time
from typing import Callable, Optional

import numpy as np

from teams_lab import finetune_protocols
from teams_lab import learning
from teams_lab import learning_report
from teams_lab import replication
from teams_lab import replication_report
from teams_lab import replication_summary
from teams_tf.utils import atomic_files


@dataclasses.dataclass(frozen=True)
class AlongRun:
  """One pretraining run's checkpoints to fine-tune.

  Attributes:
    encoder: the run's objective (a pretrained key of `replication.ENCODER_NAMES`).
    steps: checkpoint steps to fine-tune, ascending, each kept by the run and before its last.
    sweep: the replication of the run (`replication.prepare`): protocol, GLUE records, run
      directory, budget and seed; its `out_dir` holds the last checkpoint's units.
    random_init_dir: the replication whose random-init units are the floor (step 0).
    out_dir: the units' results and the report.
    work_dir: the sweeps' run directories (`<work_dir>/along_step_<N>`).
    rates: task -> the rate the replication chose for the run's last checkpoint
      (`build`), at which every step is fine-tuned.
  """
  encoder: str
  steps: tuple[int, ...]
  sweep: replication.Replication
  random_init_dir: str
  out_dir: str
  work_dir: str
  rates: dict[str, float]


def _run_sweep(protocol: finetune_protocols.FineTuneProtocol, encoder: str, learning_dir: str,
               replication_dir: str, work_dir: str) -> tuple[replication.Replication, dict]:
  """The replication of `encoder`'s pretraining run, and the run's learning result.

  Args:
    protocol: the replication's fine-tuning protocol.
    encoder: the run's objective.
    learning_dir: the learning benchmark's result files (`tools/benchmark_learning.py`'s
      --out_dir), whose `<encoder>.json` names the run's setup.
    replication_dir: the replication of those runs (`tools/replicate.py`'s --out_dir).
    work_dir: the run directories and converted GLUE records (`--work_dir` of both tools).

  Raises:
    ValueError: `learning_dir` has no finished run of `encoder`.
  """
  result = learning_report.load_results(learning_dir).get(encoder)
  if result is None or not result['curve']:
    raise ValueError(f'{learning_dir} has no finished {encoder} pretraining run; pretrain it '
                     f'with tools/benchmark_learning.py --objectives={encoder} --keep_checkpoints.')
  setup = dataclasses.replace(learning.Setup(**result['setup']), work_dir=work_dir)
  return replication.Replication(
      protocol, replication_dir, work_dir, replication.glue_data_dir(work_dir, setup.vocab_size),
      {encoder: learning.run_dir(setup, encoder)}, setup.max_train_flops, setup.seed), result


def kept_steps(run_dir: str) -> list[int]:
  """The steps of the checkpoints a pretraining run kept (`ckpt-<step>.index`), ascending;
  none when the run directory is gone."""
  if not os.path.isdir(run_dir):
    return []
  matches = (re.fullmatch(r'ckpt-(\d+)\.index', name) for name in os.listdir(run_dir))
  return sorted(int(match.group(1)) for match in matches if match)


def _learning_rates(sweep: replication.Replication, encoder: str) -> dict[str, float]:
  """Task -> the rate the replication chose for the run's last checkpoint.

  Raises:
    ValueError: seed 1 of the last checkpoint has not tried the whole grid on a task.
  """
  rates = {task: replication.choose_learning_rate(sweep.protocol, sweep.out_dir, encoder, task)
           for task in sweep.protocol.tasks}
  missing = [task for task, rate in rates.items() if rate is None]
  if missing:
    raise ValueError(f'{sweep.out_dir} has not chosen the {encoder} learning rate of '
                     f'{", ".join(missing)} yet: fine-tune the run\'s last checkpoint first '
                     f'(tools/replicate.py --encoders={encoder} with the same --out_dir).')
  return rates


def build(protocol: finetune_protocols.FineTuneProtocol, encoder: str, steps, learning_dir: str,
          replication_dir: str, random_init_dir: str, out_dir: str,
          work_dir: str) -> tuple[AlongRun, dict]:
  """The AlongRun of `encoder`'s pretraining run at `steps`, and the run's learning result.

  Args:
    protocol: the replication's fine-tuning protocol.
    encoder: the run's objective.
    steps: checkpoint steps to fine-tune, in any order, repeats allowed.
    learning_dir: the learning benchmark's result files (`tools/benchmark_learning.py`'s
      --out_dir), whose `<encoder>.json` names the run's setup.
    replication_dir: the replication of those runs (`tools/replicate.py`'s --out_dir), which has
      chosen the last checkpoint's rates.
    random_init_dir, out_dir, work_dir: as in `AlongRun`; `work_dir` also holds the run
      directories and converted GLUE records (`--work_dir` of both tools).

  Raises:
    ValueError: `learning_dir` has no finished run of `encoder`, or `replication_dir` has not
      chosen its rates yet.
  """
  sweep, pretraining = _run_sweep(protocol, encoder, learning_dir, replication_dir, work_dir)
  along = AlongRun(encoder, tuple(sorted(set(steps))), sweep, random_init_dir, out_dir, work_dir,
                   _learning_rates(sweep, encoder))
  return along, pretraining


def check(along: AlongRun) -> None:
  """Raises ValueError when a step to run is not a kept checkpoint before the run's last, or a
  committed unit was run with other settings."""
  to_run = set()
  for step, unit in plan(along):
    sweep = step_sweep(along, step)
    result = replication.read_unit(sweep.out_dir, unit)
    if result is None:
      to_run.add(step)
    elif replication.committed_settings(result) != dict(replication.unit_settings(sweep, unit),
                                                        pretraining_step=step):
      raise ValueError(f'{replication.unit_path(sweep.out_dir, unit)} was run with other '
                       f'settings ({result.get("settings")}); move it away or choose another '
                       '--out_dir.')
  run_dir = along.sweep.run_dirs[along.encoder]
  kept = kept_steps(run_dir)
  earlier = kept[:-1]
  wrong = sorted(step for step in to_run if step not in earlier)
  if wrong and not kept:
    raise ValueError(
        f'{run_dir} holds no checkpoint, so steps {wrong} cannot be fine-tuned: the pretraining '
        'run directory is gone. Pretraining again (tools/benchmark_learning.py '
        '--keep_checkpoints, into another --out_dir) gives another run, whose last checkpoint '
        'the replication must fine-tune first.')
  if wrong:
    raise ValueError(
        f'{run_dir} keeps no checkpoint before its last at steps {wrong}; it keeps '
        f'{", ".join(map(str, earlier)) or "none"} (the last, {kept[-1]}, is the '
        'replication\'s). A run pretrained with tools/benchmark_learning.py --keep_checkpoints '
        'keeps one every 500 steps.')


def step_sweep(along: AlongRun, step: int) -> replication.Replication:
  """The replication of the run's checkpoint at `step`: its own result and work directories."""
  run_dir = along.sweep.run_dirs[along.encoder]
  return dataclasses.replace(
      along.sweep, out_dir=os.path.join(along.out_dir, f'step_{step}'),
      work_dir=os.path.join(along.work_dir, f'along_step_{step}'),
      run_dirs={along.encoder: os.path.join(run_dir, f'ckpt-{step}')})


def plan(along: AlongRun) -> list[tuple[int, replication.Unit]]:
  """Every (step, unit) in run order: each step's tasks and seeds, the earliest step first."""
  return [(step, replication.Unit(along.encoder, task, along.rates[task], seed))
          for step in along.steps for task in along.sweep.protocol.tasks
          for seed in range(1, along.sweep.protocol.seeds + 1)]


def to_run(along: AlongRun) -> list[tuple[int, replication.Unit]]:
  """The (step, unit)s of `plan` without a committed result."""
  return [(step, unit) for step, unit in plan(along)
          if replication.read_unit(step_sweep(along, step).out_dir, unit) is None]


def run(along: AlongRun, fine_tune: Callable[[dict], None], report: Callable[[], str],
        log=print, clock=time.monotonic) -> None:
  """Fine-tunes every unit of `plan` without a result, printing progress and the table.

  Args:
    along: the run and its steps.
    fine_tune: as for `replication.run`.
    report: rewrites the report and returns its table.
    log: prints a line.
    clock: seconds, for the ETA.
  """
  units = plan(along)
  to_do = to_run(along)
  log(f'{len(units) - len(to_do)} of {len(units)} fine-tuning unit(s) done, {len(to_do)} to run')
  durations = []
  for position, (step, unit) in enumerate(to_do, 1):
    log(f'[{position}/{len(to_do)}] step {step:,}: {unit}')
    start = clock()
    result = replication.run_unit(step_sweep(along, step), unit, fine_tune,
                                  pretraining_step=step)
    durations.append(clock() - start)
    left = len(to_do) - position
    log(f'done step {step:,} {unit}: dev {result["headline_metric"]} '
        f'{replication.headline(result):.4f} in {durations[-1] / 60:.1f} min; {left} unit(s) '
        f'left, ETA {left * sum(durations) / len(durations) / 3600:.1f} h')
    log(report())


def _interpolate(points: list[tuple[int, float]], step: int) -> Optional[float]:
  """The value at `step` on the line through `points` (ascending steps); None outside them."""
  value = np.interp(step, [p for p, _ in points], [v for _, v in points], left=np.nan,
                    right=np.nan) if points else np.nan
  return None if np.isnan(value) else float(value)


def summarize(along: AlongRun, pretraining: dict) -> list[dict]:
  """The rows of the report, random init (step 0) first and the replication's last checkpoint
  last.

  Args:
    along: the run and its steps.
    pretraining: the run's learning result (`learning_report.load_results(...)[encoder]`), for each
      step's FLOPs and training time.

  Returns:
    [{'step', 'flops', 'train_seconds' (interpolated between the run's evaluations, which
    fall between checkpoints; None outside them or where they lack a time),
    'tasks': {task: `replication_summary.task_summary` entry}, 'average' (mean of the task
    medians, None until every task has every seed), 'beats_random': {task: True, False or None
    (undecided)}, empty for random init}].
  """
  protocol = along.sweep.protocol
  # Each task at its one rate, so that `task_summary` reads the seeds there.
  at_rate = {task: dataclasses.replace(protocol, learning_rates=(rate,))
             for task, rate in along.rates.items()}
  floor = {task: replication_summary.task_summary(protocol, along.random_init_dir,
                                                  replication.RANDOM, task)
           for task in protocol.tasks}
  timed = [(row['step'], row['train_seconds']) for row in pretraining['curve']
           if row.get('train_seconds') is not None]
  last = pretraining['curve'][-1]['step']
  rows = [dict(step=0, flops=0.0, train_seconds=0.0, tasks=floor)]
  for step in list(along.steps) + [last]:
    out_dir = along.sweep.out_dir if step == last else step_sweep(along, step).out_dir
    rows.append(dict(step=step, flops=step * pretraining['flops_per_step'],
                     train_seconds=_interpolate(timed, step),
                     tasks={task: replication_summary.task_summary(
                         at_rate[task], out_dir, along.encoder, task)
                            for task in protocol.tasks}))
  for row in rows:
    complete = all(entry['complete'] for entry in row['tasks'].values())
    row['average'] = (sum(entry['median'] for entry in row['tasks'].values()) /
                      len(row['tasks']) if complete else None)
    row['beats_random'] = {task: replication_summary.beats(entry, floor[task])
                           for task, entry in row['tasks'].items()} if row['step'] else {}
  return rows


def markdown(along: AlongRun, rows: list[dict], command: str) -> str:
  """The report: how its runs were made and one row per step."""
  protocol = along.sweep.protocol
  name = replication.ENCODER_NAMES[along.encoder]
  tasks = [finetune_protocols.GLUE_TASKS[task] for task in protocol.tasks]
  seed = along.sweep.pretraining_seed
  lines = [
      f'# {name} fine-tuned along its pretraining run', '',
      f'`{command}`: the {name}-mini pretraining run '
      f'({"unseeded" if seed is None else f"seed {seed}"}, budget '
      f'{along.sweep.max_train_flops:.3g} FLOPs) fine-tuned at earlier checkpoints with the '
      f'replication\'s protocol ({protocol.epochs:g} epochs of `glue_<task>_{protocol.size}`, '
      f'T = {protocol.max_seq_length}), at the rate the replication chose for the last '
      'checkpoint (' + ', '.join(f'{task_name} {finetune_protocols.format_rate(along.rates[task])}'
                                 for task, (task_name, _) in zip(protocol.tasks, tasks)) +
      f'), seeds 1..{protocol.seeds}. The last row is the replication\'s own runs '
      f'(`{os.path.relpath(along.sweep.out_dir, along.out_dir)}`), the step-0 row its '
      f'random-init encoder at its own chosen rates '
      f'(`{os.path.relpath(along.random_init_dir, along.out_dir)}`). Cells: dev score x 100, '
      'median (min–max) over seeds; "beats random init": median gap larger than both seed '
      'spreads. Training minutes are the run\'s, interpolated between its evaluations, which '
      'fall between checkpoints.', '',
      '| pretraining step | FLOPs | training minutes | ' +
      ' | '.join(f'{task_name} {metric}' for task_name, metric in tasks) +
      ' | average | beats random init (' + ' / '.join(t for t, _ in tasks) + ') |',
      '|---' * (5 + len(tasks)) + '|']
  for row in rows:
    minutes = '—' if row['train_seconds'] is None else f'{row["train_seconds"] / 60:.1f}'
    average = '—' if row['average'] is None else f'{100 * row["average"]:.1f}'
    step = f'{row["step"]:,}' if row['step'] else 'random init'
    lines.append(
        f'| {step} | {row["flops"]:.3g} | '
        f'{minutes} | ' + ' | '.join(replication_report.cell(entry, protocol.seeds)
                                     for entry in row['tasks'].values()) +
        f' | {average} | {replication_report.flags_text(row["beats_random"]) or "(floor)"} |')
  return '\n'.join(lines) + '\n'


def plot(along: AlongRun, rows: list[dict], path: str) -> None:
  """One panel per task: median and min-max against pretraining FLOPs; random init dashed."""
  pyplot = replication_report.load_pyplot()
  protocol = along.sweep.protocol
  figure, axes = pyplot.subplots(1, len(protocol.tasks),
                                 figsize=(4.5 * len(protocol.tasks), 3.8), squeeze=False)
  for axis, task in zip(axes[0], protocol.tasks):
    shown = [row for row in rows[1:] if row['tasks'][task]['values']]
    if shown:
      entries = [row['tasks'][task] for row in shown]
      axis.errorbar([row['flops'] for row in shown], [100 * e['median'] for e in entries],
                    yerr=[[100 * (e['median'] - e['min']) for e in entries],
                          [100 * (e['max'] - e['median']) for e in entries]],
                    fmt='o-', capsize=4, label=replication.ENCODER_NAMES[along.encoder])
    floor = rows[0]['tasks'][task]
    if floor['values']:
      axis.axhline(100 * floor['median'], color='gray', linestyle='--',
                   label='random init (median)')
    axis.legend(fontsize=7)
    task_name, metric = finetune_protocols.GLUE_TASKS[task]
    axis.set(xlabel='pretraining FLOPs', title=f'{task_name} dev {metric} x 100')
    axis.grid(alpha=0.3)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  pyplot.close(figure)


def report_path(along: AlongRun) -> str:
  """`<out_dir>/<encoder>.md`, beside its .json and .png."""
  return os.path.join(along.out_dir, f'{along.encoder}.md')


def write_report(along: AlongRun, pretraining: dict, command: str) -> str:
  """Writes `<encoder>.{md,json,png}` to `out_dir` from the committed units; returns the .md.

  `pretraining` is the run's learning result (`build`'s).
  """
  rows = summarize(along, pretraining)
  text = markdown(along, rows, command)
  os.makedirs(along.out_dir, exist_ok=True)
  path = report_path(along)
  atomic_files.write_text(path, text)
  atomic_files.write_json(path[:-len('.md')] + '.json', dict(
      encoder=along.encoder, pretraining_seed=along.sweep.pretraining_seed,
      learning_rates=along.rates, rows=rows,
      protocol=dataclasses.asdict(along.sweep.protocol)))
  plot(along, rows, path[:-len('.md')] + '.png')
  return text
