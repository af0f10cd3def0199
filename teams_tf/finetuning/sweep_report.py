"""The tables of a GLUE seed sweep (`teams_tf.finetuning.sweep`), from its runs' results.

`results.md` and `results.json` in the sweep's `output_dir` give per task and metric the median,
mean, std and min-max over seeds, and the GLUE average: the mean over tasks of the median of the
paper's headline metric (MCC for CoLA, Spearman for STS-B, accuracy otherwise). Scores are in
[-1, 1] in the JSON and x 100 in the Markdown table.
"""

import json
import math
import os

import numpy as np
import tensorflow as tf

from teams_tf.finetuning import glue_metrics
from teams_tf.utils import atomic_files


def read_json(path):
  """A result.json or table `write_json` wrote."""
  with tf.io.gfile.GFile(path, 'r') as f:
    return json.load(f)


def write_json(path, data):
  """Writes `data` to `path` atomically as strict JSON: NaN (an undefined correlation) as null."""
  atomic_files.write_json(path, _nan_to_none(data))


def _nan_to_none(data):
  if isinstance(data, dict):
    return {key: _nan_to_none(value) for key, value in data.items()}
  if isinstance(data, (list, tuple)):
    return [_nan_to_none(value) for value in data]
  if isinstance(data, float) and math.isnan(data):
    return None
  return data


def summarize(results, tasks):
  """Per task and metric: median, mean, std (n - 1), min, max over seeds; GLUE average.

  Args:
    results: list of result dicts (`sweep.run_one`'s, or read back from result.json).
    tasks: task names in table order.

  Returns:
    {'tasks': {task: {'seeds', 'headline_metric', 'metrics': {name: stats},
                      'single_class_seeds': seeds whose dev predictions were one class}},
     'glue_average': {'median', 'mean', 'tasks'}} with scores in [-1, 1]; NaN stays NaN.
  """
  summary = {'tasks': {}}
  for task in tasks:
    runs = sorted((r for r in results if r['task'] == task), key=lambda r: r['seed'])
    if not runs:
      continue
    metrics = {}
    for name in glue_metrics.TASK_METRICS[task]:
      values = np.array([np.nan if r['metrics'][name] is None else r['metrics'][name]
                         for r in runs], np.float64)
      metrics[name] = {
          'median': float(np.median(values)),
          'mean': float(np.mean(values)),
          'std': float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
          'min': float(np.min(values)),
          'max': float(np.max(values)),
          'values': [float(v) for v in values],
      }
    summary['tasks'][task] = {'seeds': [r['seed'] for r in runs],
                              'headline_metric': glue_metrics.headline_metric(task),
                              'metrics': metrics,
                              'single_class_seeds': [r['seed'] for r in runs
                                                     if r.get('predicted_classes') == 1]}
  headlines = [entry['metrics'][entry['headline_metric']]
               for entry in summary['tasks'].values()]
  summary['glue_average'] = {
      'median': float(np.mean([h['median'] for h in headlines])) if headlines else float('nan'),
      'mean': float(np.mean([h['mean'] for h in headlines])) if headlines else float('nan'),
      'tasks': list(summary['tasks']),
  }
  return summary


def markdown(summary, title):
  """The summary as a Markdown table, scores x 100."""
  lines = [f'# {title}', '',
           'GLUE dev sets (MNLI: matched), scores x 100 over seeds; std with n - 1; the '
           "paper's headline metric per task in bold.", '',
           '| task | metric | seeds | median | mean | std | min-max |',
           '|---|---|---|---|---|---|---|']
  for task, entry in summary['tasks'].items():
    for name, stats in entry['metrics'].items():
      label = glue_metrics.DESCRIPTIONS[name]
      if name == entry['headline_metric']:
        label = f'**{label}**'
      lines.append(
          f'| {task} | {label} | {len(entry["seeds"])} | {100 * stats["median"]:.2f} | '
          f'{100 * stats["mean"]:.2f} | {100 * stats["std"]:.2f} | '
          f'{100 * stats["min"]:.2f}-{100 * stats["max"]:.2f} |')
  collapsed = [f'{task} seed {seed}' for task, entry in summary['tasks'].items()
               for seed in entry.get('single_class_seeds', [])]
  if collapsed:
    lines += ['', f'**Warning: {len(collapsed)} run(s) predicted a single class for every dev '
              f'example** ({", ".join(collapsed)}): their scores are the majority-class '
              'baseline, not what the encoder learned.']
  average = summary['glue_average']
  lines += ['', f'GLUE average over {len(average["tasks"])} task(s) '
            f'({", ".join(average["tasks"])}) of the headline metric: '
            f'{100 * average["median"]:.2f} (medians over seeds), '
            f'{100 * average["mean"]:.2f} (means).', '']
  return '\n'.join(lines)


def write_tables(results, output_dir, tasks, seeds, size, init_checkpoint):
  """Writes `results.json` and `results.md` of a sweep's results to `output_dir`.

  Args:
    results: every run's result dict (read back from its result.json).
    output_dir: the sweep's folder.
    tasks: task names in table order.
    seeds: the sweep's seeds.
    size: the encoder size the sweep ran.
    init_checkpoint: the pretraining checkpoint it fine-tuned ('' = random init).

  Returns:
    The Markdown table (`markdown`) written to `results.md`; `results.json` holds `summarize`'s
    summary with size, init_checkpoint and seeds.
  """
  summary = summarize(results, tasks)
  summary.update(size=size, init_checkpoint=init_checkpoint, seeds=seeds)
  table = markdown(summary, f'GLUE: {init_checkpoint or "random init"}, size '
                   f'{size}, seeds {",".join(map(str, seeds))}')
  write_json(os.path.join(output_dir, 'results.json'), summary)
  atomic_files.write_text(os.path.join(output_dir, 'results.md'), table)
  return table
