"""Does every `*_demo` read context? Each objective's demo run beside its context-free baselines.

The README's first command is `teams_demo`; every objective has a `<objective>_demo` with the same
recipe. Each is run here as a user runs it (`python -m teams_tf.train --mode=train_and_eval` into
a new directory), alone, and its last validation is compared metric by metric with what a model
that does not read context gets (`run_summary.baseline`: the context-free baseline where the task
reports one, else chance). A demo passes when every such metric is above its baseline.

Each finished demo writes `<out_dir>/<objective>.json`, so a rerun skips it and the report fills in
across sessions; `write_report` writes `demos.md` from those files.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from typing import Callable, Optional, Sequence

from official.core import exp_factory

from teams_tf.training import run_summary
from teams_tf.utils import atomic_files
from teams_tf.utils import hardware
from teams_tf.utils import progress

# The objectives' base demo experiments, the README's first one first.
OBJECTIVES = ('teams', 'electra', 'bert', 'mws', 'coco_lm', 'taco', 'script')


def experiment(objective: str) -> str:
  return f'{objective}_demo'


def verdicts(metrics: dict[str, float], model_config) -> list[dict]:
  """Each main metric of the last validation beside its baseline, and whether it is above.

  Args:
    metrics: the last validation's scalars (`run_summary.read_scalars` at one step).
    model_config: the experiment's `task.model` (MWS's chance level depends on K).

  Returns:
    One dict per metric that has a baseline: metric, value, baseline, baseline_kind, above.
  """
  rows = []
  for name in run_summary.main_metrics(metrics, model_config):
    compared = run_summary.baseline(name, metrics, model_config)
    if compared is not None:
      kind, value = compared
      rows.append(dict(metric=name, value=metrics[name], baseline=value, baseline_kind=kind,
                       above=metrics[name] > value))
  return rows


def result_path(out_dir: str, objective: str) -> str:
  return os.path.join(out_dir, f'{objective}.json')


def _train(command: Sequence[str], log_path: str) -> int:
  with open(log_path, 'w') as log_file:
    return subprocess.run(command, stdout=log_file, stderr=subprocess.STDOUT,
                          check=False).returncode


def run_demo(objective: str, work_dir: str, out_dir: str, log: Callable[[str], None] = print,
             train: Callable[[Sequence[str], str], int] = _train) -> Optional[dict]:
  """Runs one demo into a new `<work_dir>/<experiment>` and writes its result file.

  A demo with a result file is skipped (its result returned). A directory left by an interrupted
  run is removed first: a resumed run's time would not be a demo's time.

  Args:
    objective: one of `OBJECTIVES`.
    work_dir: where the run directories and their logs go.
    out_dir: where the result files go.
    log: progress lines.
    train: runs a command line with its output to a log file and returns its exit status
      (replaceable in tests).

  Returns:
    The result dict, or None when the run failed (its log is named).
  """
  path = result_path(out_dir, objective)
  if os.path.exists(path):
    with open(path) as f:
      return json.load(f)
  name = experiment(objective)
  model_dir = os.path.join(work_dir, name)
  shutil.rmtree(model_dir, ignore_errors=True)
  os.makedirs(work_dir, exist_ok=True)
  command = [sys.executable, '-m', 'teams_tf.train', f'--experiment={name}',
             '--mode=train_and_eval', f'--model_dir={model_dir}']
  load = os.getloadavg()[0]
  log(f'{name}: {" ".join(command[1:])} (load average {load:.2f} before it); log in '
      f'{model_dir}.log')
  start = time.monotonic()
  status = train(command, f'{model_dir}.log')
  seconds = time.monotonic() - start
  validation = run_summary.read_scalars(os.path.join(model_dir, 'validation'))
  if status or not validation:
    log(f'{name}: teams_tf.train exited with {status}; see {model_dir}.log')
    return None
  step = max(validation)
  rows = verdicts(validation[step], exp_factory.get_exp_config(name).task.model)
  result = dict(experiment=name, step=step, seconds=round(seconds, 1),
                machine=hardware.description(), load_average_before=round(load, 2),
                metrics=rows, passes=all(row['above'] for row in rows))
  os.makedirs(out_dir, exist_ok=True)
  atomic_files.write_json(path, result)
  log(f'{name}: step {step:,} in {progress.format_duration(seconds)}; '
      + ', '.join(f'{r["metric"]} {r["value"]:.3f} ({r["baseline_kind"]} {r["baseline"]:.3f})'
                  for r in rows))
  return result


def markdown(results: dict[str, dict], command: str) -> str:
  """The report: one row per metric of every finished demo, the verdict per demo."""
  lines = [
      '# Every demo beside its context-free baselines', '',
      f'`{command}`: each `<objective>_demo` run alone, as the README runs `teams_demo`, into a '
      'new directory. A metric counts as read from context when it ends above its context-free '
      'baseline (the task\'s own: most frequent token at [MASK] for MLM, token identity for RTD '
      'and MWS), or above chance where the task reports none.', '',
      '| demo | metric | at the last step | baseline | above it | time in all | machine |',
      '|---|---|---:|---:|---|---:|---|']
  for objective in OBJECTIVES:
    result = results.get(objective)
    if result is None:
      lines.append(f'| {experiment(objective)} | not run yet | | | | | |')
      continue
    for i, row in enumerate(result['metrics']):
      first = i == 0
      lines.append(
          f'| {result["experiment"] if first else ""} | {row["metric"]} | {row["value"]:.3f} | '
          f'{row["baseline"]:.3f} ({row["baseline_kind"]}) | {"yes" if row["above"] else "**no**"}'
          f' | {progress.format_duration(result["seconds"]) if first else ""} | '
          f'{result["machine"] if first else ""} |')
  done = [results[o] for o in OBJECTIVES if o in results]
  failing = [r['experiment'] for r in done if not r['passes']]
  lines += ['', (f'{len(done)} of {len(OBJECTIVES)} demos run; ' +
                 ('every one is above all its baselines.' if not failing else
                  f'below a baseline: {", ".join(failing)}.'))]
  return '\n'.join(lines) + '\n'


def write_report(out_dir: str, command: str) -> dict[str, dict]:
  """Reads the result files of `out_dir` and writes `demos.md` beside them."""
  results = {}
  for objective in OBJECTIVES:
    if os.path.exists(result_path(out_dir, objective)):
      with open(result_path(out_dir, objective)) as f:
        results[objective] = json.load(f)
  atomic_files.write_text(os.path.join(out_dir, 'demos.md'), markdown(results, command))
  return results
