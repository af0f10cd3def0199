"""The learning benchmark's report: its runs' result files as `learning.{md,json,png}`.

The report is written from the result files `learning.run_objective` leaves in `out_dir`, never
read back: each objective's last evaluation beside its targets and trivial baselines, then its
validation curve against training FLOPs and minutes.
"""

import json
import os

from official.core import exp_factory

from teams_lab import learning
from teams_tf.utils import atomic_files


def preamble(setup: learning.Setup, bert_steps: int, command: str) -> str:
  """The report's title and the paragraph saying how its runs were made.

  Args:
    setup: the runs' settings.
    bert_steps: the budget in BERT-mini steps (`tools/benchmark_learning.py --bert_steps`).
    command: the command line that writes the report (`command_lines.tool_command`).
  """
  # Every mini objective shares bert_mini's data and trainer.
  recipe = exp_factory.get_exp_config('bert_mini')
  validation_data = recipe.task.validation_data
  seeds = '' if setup.seed is None else (
      f', seeded with {setup.seed} (`teams_tf.train --seed`)')
  return '\n'.join([
      '# Learning benchmark: mini objectives at equal training FLOPs', '',
      f'`{command}`: every '
      f'`<objective>_mini` (registry/experiments.py) trained to {setup.max_train_flops:.3g} '
      f'FLOPs ({bert_steps:,} BERT-mini steps){seeds} on wiki_00-48 of the shared Wikipedia '
      f'extract, held-out evaluation on wiki_49 '
      f'({validation_data.mask_rate:.0%} masking, {setup.validation_steps} batches '
      f'of {validation_data.global_batch_size} x {recipe.task.train_data.seq_length} tokens) '
      f'every {setup.validation_interval} steps; corpus vocabulary of {setup.vocab_size:,} '
      'WordPiece tokens. Training minutes are wall time on the machine each section names: '
      'compare them within one machine only.'])


def load_results(out_dir: str) -> dict[str, dict]:
  """Run -> result, for every run (`mini_runs`) whose result file exists in `out_dir`."""
  results = {}
  for objective in learning.mini_runs():
    path = learning.result_file(out_dir, objective)
    if os.path.exists(path):
      with open(path) as f:
        results[objective] = json.load(f)
  return results


def _format(value, digits=3):
  return '—' if value is None else f'{value:.{digits}f}'


def _target_rows(run: str, result: dict) -> list[str]:
  return [f'| {run} | {verdict["metric"]} | {_format(verdict["value"])} | {verdict["target"]} | '
          f'{_format(verdict["baseline"])} | {"yes" if verdict["met"] else "**no**"} |'
          for verdict in result['targets']]


def markdown(results: dict[str, dict], preamble: str) -> str:
  """The report: the targets table, then each objective's validation curve."""
  lines = [preamble, '', '## Targets (last evaluation of each run)', '',
           '| objective | metric | held-out | target | trivial baseline | met |',
           '|---|---|---|---|---|---|']
  for objective in learning.OBJECTIVES:
    if objective not in results:
      for target in learning.TARGETS[objective]:
        lines.append(f'| {objective} | {target.metric} | not run yet | {target.threshold} | '
                     f'{target.baseline} | — |')
      continue
    lines += _target_rows(objective, results[objective])
  for objective in results:
    if objective not in learning.OBJECTIVES:
      lines += _target_rows(objective, results[objective])
  for objective, result in results.items():
    targets = learning.TARGETS[learning.objective_of(objective)]
    metrics = [t.metric for t in targets]
    metrics += list(dict.fromkeys(t.baseline for t in targets if not t.baseline[0].isdigit()))
    # Context-free baselines the run reported beyond its targets' (e.g. MWS's, beside chance).
    metrics += sorted({key for row in result['curve'] for key in row
                       if 'context_free' in key} - set(metrics))
    # A variant that drops a loss (e.g. TEAMS without MWS) reports none of its metric.
    metrics = [m for m in metrics if any(m in row for row in result['curve'])]
    lines += ['', f'## {learning.mini_runs()[objective]}', '',
              f'{result["flops_per_step"]:.3g} training FLOPs per step; trained on '
              f'{result.get("machine", "a machine not recorded")}.', '',
              '| step | PFLOPs | training minutes | ' + ' | '.join(metrics) + ' |',
              '|---' * (3 + len(metrics)) + '|']
    for row in result['curve']:
      minutes = row.get('train_seconds')
      lines.append(
          f'| {row["step"]:,} | {row["flops"] / 1e15:.2f} | '
          f'{"—" if minutes is None else f"{minutes / 60:.1f}"} | ' +
          ' | '.join(_format(row.get(metric)) for metric in metrics) + ' |')
  return '\n'.join(lines) + '\n'


def plot(results: dict[str, dict], path: str) -> None:
  """Held-out metrics against training FLOPs, one panel per metric, all objectives together."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  panels = ('mlm_accuracy', 'rtd_auc', 'mws_accuracy', 'copy_auc', 'disc_auc')
  figure, axes = pyplot.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
  for axis, metric in zip(axes, panels):
    for objective, result in results.items():
      rows = [row for row in result['curve'] if metric in row]
      if rows:
        axis.plot([row['flops'] for row in rows], [row[metric] for row in rows],
                  marker='.', label=objective)
      if metric == 'mlm_accuracy':
        baseline = [row['mlm_context_free_accuracy'] for row in result['curve']
                    if 'mlm_context_free_accuracy' in row]
        if baseline:
          axis.axhline(baseline[-1], color='gray', linestyle=':', linewidth=1)
    axis.set_title(metric + (' (dotted: context-free)' if metric == 'mlm_accuracy' else ''))
    axis.set_xlabel('training FLOPs')
    axis.grid(alpha=0.3)
    if axis.get_legend_handles_labels()[0]:
      axis.legend(fontsize=7)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  pyplot.close(figure)


def write_report(setup: learning.Setup, preamble: str) -> dict[str, dict]:
  """Writes learning.{md,json,png} into `setup.out_dir` from the result files there."""
  results = load_results(setup.out_dir)
  atomic_files.write_text(os.path.join(setup.out_dir, 'learning.md'),
                          markdown(results, preamble))
  atomic_files.write_json(os.path.join(setup.out_dir, 'learning.json'), results)
  if results:
    plot(results, os.path.join(setup.out_dir, 'learning.png'))
  return results
