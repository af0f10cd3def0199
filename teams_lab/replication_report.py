"""The report of the mini replication (`replication.py`), from its committed result files.

The table of every encoder and task (`replication_summary`: the median and min-max over seeds of
the dev headline metric at the learning rate its seed 1 chose, and whether it beats the
random-init encoder by more than the seed spread). Per seed paper, one sentence saying whether
its claimed ordering reproduces on the average over tasks of the medians, against the
fine-tuning seed spread and, for encoders pretrained more than once (other sweeps), the range of
their runs' averages. Written as `replication.{md,json}`, `pretraining.png` (held-out MLM
accuracy against training FLOPs, from the learning benchmark's result files) and `glue.png` (one
panel per task).
"""

import dataclasses
import os
from typing import NamedTuple

from teams_lab import finetune_protocols
from teams_lab import learning_report
from teams_lab import replication
from teams_lab import replication_summary
from teams_tf.utils import atomic_files

# (paper, claimed ordering, pairs (a, b) meaning "a fine-tunes better than b"): each paper's
# headline ordering, then the ablations the replication runs.
PAPER_CLAIMS = (
    ('TEAMS', 'TEAMS > ELECTRA > BERT', (('teams', 'electra'), ('electra', 'bert'))),
    ('COCO-LM', 'COCO-LM > ELECTRA and COCO-LM > BERT',
     (('coco_lm', 'electra'), ('coco_lm', 'bert'))),
    ('TACO', 'TACO > BERT', (('taco', 'bert'),)),
    ('SCRIPT', 'SCRIPT > ELECTRA', (('script', 'electra'),)),
    # Its ablation of partial layer sharing: 81.99 against 81.65 for Small++.
    ('TEAMS', 'TEAMS > No Tie (Table 4)', (('teams', 'teams_no_tie'),)),
)


class _Gap(NamedTuple):
  """One pair of a paper's ordering: "a - b" in points, against the spread it is judged by."""
  name: str
  points: float
  spread: float
  of_pretraining: bool  # The spread is the range of the runs' averages, not the seeds'.
  means: str  # Which sides are means over pretraining runs; '' if neither.


def flags_text(beats_random: dict) -> str:
  """'yes / no / —' for beating random init on each task (— undecided); '' for random init."""
  return ' / '.join({True: 'yes', False: 'no', None: '—'}[flag] for flag in beats_random.values())


def paper_sentence(paper: str, claim: str, pairs, summary: dict) -> str:
  """Whether `claim` reproduces on the averages over tasks, by how much, against the spread.

  Where an encoder was pretrained more than once, its side of a gap is the mean of its runs'
  averages, not this sweep's run alone. A gap's spread is the larger of the two encoders'
  fine-tuning seed spreads and the ranges of their runs' averages.
  """
  names = replication.ENCODER_NAMES
  missing = sorted({names[e] for pair in pairs for e in pair if summary[e]['average'] is None})
  if missing:
    verb = 'lacks' if len(missing) == 1 else 'lack'
    return (f'The {paper} paper reports {claim} on GLUE: not enough runs yet ({", ".join(missing)} '
            f'{verb} a task or seed).')
  gaps = []
  for a, b in pairs:
    first, second = summary[a]['average'], summary[b]['average']
    fine_tuning = max(first['spread'], second['spread'])
    pretraining = max(first.get('pretraining_range', 0.0), second.get('pretraining_range', 0.0))
    means = ' and '.join(f'{names[e]} {len(summary[e]["pretraining_runs"])}' for e in (a, b)
                         if 'runs_mean' in summary[e]['average'])
    means = means and f'means over pretraining runs: {means}'
    gaps.append(_Gap(f'{names[a]} - {names[b]}',
                     100 * (first.get('runs_mean', first['median']) -
                            second.get('runs_mean', second['median'])),
                     100 * max(fine_tuning, pretraining), pretraining > fine_tuning, means))
  holds = all(gap.points > 0 for gap in gaps)
  within = [gap.name for gap in gaps if abs(gap.points) <= gap.spread]
  details = ', '.join(
      f'{gap.name} {gap.points:+.1f} points ({gap.means + "; " if gap.means else ""}seed spread '
      f'{gap.spread:.1f}{" across pretraining runs" if gap.of_pretraining else ""})'
      for gap in gaps)
  verdict = ('does not reproduce' if not holds else
             'holds on the medians' if within else 'reproduces')
  if within:
    tail = (f'{", but" if holds else ";"} {" and ".join(within)} '
            f'{"is" if len(within) == 1 else "are"} within the seed spread, so more seeds or '
            'compute would be needed to tell')
  else:
    tail = '; every gap exceeds the seed spread'
  return (f'The {paper} paper reports {claim} on GLUE; on the average of the task medians at '
          f'this scale ({details}) the ordering {verdict}{tail}.')


def cell(entry, seeds):
  """'median (min–max)' x 100 of a `task_summary` entry, with the seed count while incomplete."""
  if not entry['values']:
    return 'not run yet'
  text = f'{100 * entry["median"]:.1f} ({100 * entry["min"]:.1f}–{100 * entry["max"]:.1f})'
  return text if entry['complete'] else f'{text}, {len(entry["values"])}/{seeds} seeds'


def _pretraining_columns(result):
  if result is None or not result['curve']:
    return '— | — | —'
  last = result['curve'][-1]
  minutes = last.get('train_seconds')
  return (f'{last["flops"]:.3g} | {last["step"]:,} | '
          f'{"—" if minutes is None else f"{minutes / 60:.1f}"}')


def table(protocol, summary: dict, pretraining: dict) -> str:
  """The Markdown table: encoders x tasks, chosen rates, random-init flags, pretraining cost."""
  task_names = [finetune_protocols.GLUE_TASKS[task] for task in protocol.tasks]
  header = ''.join(f' {name} {metric} | lr |' for name, metric in task_names)
  flags_header = ' / '.join(name for name, _ in task_names)
  lines = [f'| encoder |{header} average | beats random init ({flags_header}) | '
           'pretraining FLOPs | steps | training minutes |',
           '|---' * (6 + 2 * len(task_names)) + '|']
  for encoder, entry in summary.items():
    cells = ''.join(f' {cell(task_entry, protocol.seeds)} | '
                    f'{finetune_protocols.format_rate(task_entry["learning_rate"])} |'
                    for task_entry in entry['tasks'].values())
    average = '—' if entry['average'] is None else f'{100 * entry["average"]["median"]:.1f}'
    flags = flags_text(entry['beats_random']) or '(floor)'
    lines.append(f'| {replication.ENCODER_NAMES[encoder]} |{cells} {average} | {flags} | '
                 f'{_pretraining_columns(pretraining.get(encoder))} |')
  return '\n'.join(lines)


# The analysis behind a failing encoder (issue 23: the report says why), kept by hand.
WHY_NOT_BEATING_RANDOM = (
    'Why, measured with linear probes of the frozen encoders (`tools/probe_encoders.py`): the '
    'layers of the encoders trained with RTD at ELECTRA\'s weight 50 lose the SST-2 sentiment '
    'their word embeddings hold, and those at TEAMS\' weight 5, ELECTRA\'s layout included, '
    'keep it, as MWS-only does, but for ELECTRA at weight 5 with TEAMS\' attention head, whose '
    'layers fall to random init\'s level ([probes_sst2.md](probes_sst2.md)). On STS-B every '
    'encoder\'s word embeddings hold the similarity; the layers of ELECTRA at weight 50 or 5 and '
    'of its other variants but weight 10, of COCO-LM and of TEAMS without MWS at weight 50 or '
    'without its shared layer lose it to within a few points of random init\'s level, the '
    'others keep it '
    '([probes_stsb_pair.md](probes_stsb_pair.md)). Where the layers keep it and fine-tuning '
    'still does not beat random init on STS-B (TEAMS, No Tie, TACO, SCRIPT), [CLS], the '
    'position fine-tuning reads, holds it no better than random init\'s does '
    '([probes_stsb_cls.md](probes_stsb_cls.md)); only ELECTRA (RTD weight 10) held it there, and '
    'a second pretraining run of it does not. The discriminators\' [CLS] hold SST-2\'s '
    'sentiment no better than random init\'s either ([probes_sst2_cls.md](probes_sst2_cls.md)). '
    'TEAMS without MWS keeps every probed feature on both of its pretraining runs, to about a '
    'point, its [CLS] among them, which holds SST-2\'s sentiment at random init\'s level, not '
    'below it; its second run fails the rule by margins that differ between its runs (CoLA '
    '13.5 and 5.0), not by features. Without the layer its generator shares it loses the '
    'similarity and its [CLS] the sentiment, as ELECTRA at weight 5 does: with RTD alone, that '
    'layer, which MLM also trains, is what keeps them. SCRIPT, probed on SST-2 on its second '
    'pretraining run only, holds the sentiment no better than random init in its word '
    'embeddings or in any layer ([../replication_seed2/probes_sst2.md]'
    '(../replication_seed2/probes_sst2.md)); of the other encoders only TEAMS without MWS at '
    'weight 50 has word embeddings at that level. '
    'See [RECIPE_NOTES.md](../../teams_lab/RECIPE_NOTES.md), "Encoders that fine-tune worse '
    'than random init", "STS-B: every encoder\'s tokens hold the similarity, one encoder\'s '
    '[CLS] does", "TEAMS without MWS at ELECTRA\'s RTD weight", "ELECTRA at TEAMS\' RTD '
    'weight", "A second run of TEAMS without MWS", "TEAMS without MWS and without its '
    'shared layer" and "Second runs of SCRIPT and TACO".')


def _failing_label(encoder: str, entry: dict) -> str:
  """The encoder's name, with how many of its runs fail when it was pretrained more than once."""
  failed, runs = replication_summary.failing_runs(entry)
  return replication.ENCODER_NAMES[encoder] + (
      f' ({failed} of {runs} pretraining runs)' if runs > 1 else '')


def preamble(protocol, recipe, bert_steps: int, pretraining: dict, learning_report: str,
             command: str, random_init=None) -> str:
  """The report's title and how its runs were made.

  Args:
    protocol: the fine-tuning protocol.
    recipe: the `bert_mini` ExperimentConfig, whose data and trainer every mini objective shares.
    bert_steps: the pretraining budget in BERT-mini steps.
    pretraining: the learning benchmark's results (`learning_report.load_results`), which hold the
      budget and the pretraining seed.
    learning_report: the learning benchmark's report, relative to the replication's.
    command: the `tools/replicate.py` command line that writes the report.
    random_init: the sweep whose random-init runs the report uses, relative to the
      replication's; None for its own.
  """
  budgets = {result['setup']['max_train_flops'] for result in pretraining.values()}
  budget = (f'{budgets.pop():.3g} training FLOPs, the cost of ' if len(budgets) == 1
            else 'the training FLOPs of ') + f'{bert_steps:,} BERT-mini steps'
  seeds = {result['setup'].get('seed') for result in pretraining.values()} - {None}
  if seeds:
    budget += f', pretraining seed {", ".join(str(seed) for seed in sorted(seeds))}'
  encoder, data = recipe.task.model.encoder, recipe.task.train_data
  subsets = ', '.join(f'{finetune_protocols.GLUE_TASKS[task][0]} train a random subset of {n:,} '
                      f'examples (seed {protocol.subset_seed})'
                      for task, n in protocol.max_train_examples if task in protocol.tasks)
  rates = ', '.join(finetune_protocols.format_rate(rate) for rate in protocol.learning_rates)
  tasks = ', '.join(f'{name} ({metric})' for name, metric in
                    (finetune_protocols.GLUE_TASKS[task] for task in protocol.tasks))
  return '\n'.join([
      '# Mini replication: TEAMS, ELECTRA, BERT, COCO-LM, TACO, SCRIPT on GLUE at equal '
      'pretraining FLOPs', '',
      f'`{command}`: every '
      f'`<objective>_mini` pretrained by the learning benchmark ({learning_report}) to '
      f'{budget}; its kept encoder, and a random-init encoder '
      f'of the same shape, fine-tuned with `glue_<task>_{protocol.size}` (batch 32, 10% warm-up '
      f'and linear decay, dropout 0.1) for {protocol.epochs:g} epochs on {tasks}, dev sets '
      f'complete, {subsets or "train sets whole"}, T = {protocol.max_seq_length}. Learning '
      f'rate: seed 1 runs at each of {rates}; the rate with the best dev headline metric is '
      f'kept per encoder and task, and seeds 2..{protocol.seeds} run at it only. Cells: dev '
      f'score x 100, median (min–max) over seeds at that rate. Differences from the papers: a '
      f'mini encoder ({encoder.num_layers} layers, hidden {encoder.hidden_size}) pretrained at '
      f'{data.mask_rate:.0%} masking (not the usual 15%) with T = {data.seq_length} for a tiny '
      f'budget, {protocol.epochs:g} fine-tuning epochs, the train subsets, few seeds, a '
      'learning rate picked on the dev set from seed 1 alone, the same way for every encoder, '
      'and the dev score at the end of fine-tuning (the TEAMS paper reports the best one '
      'during fine-tuning). Training minutes are the pretraining runs\' wall time on the '
      'machines the learning report names.' + (
          f' The random-init rows are the runs in `{random_init}`: random init does not depend '
          'on the pretraining run, so this sweep fine-tunes none of its own.' if random_init
          else '')])


def markdown(protocol, summary: dict, pretraining: dict, head: str) -> str:
  """The report: `head` (`preamble`), the table, random-init verdicts, paper sentences."""
  names = replication.ENCODER_NAMES
  failing, undecided = replication_summary.not_beating_random(summary)
  lines = [head, '', f'## GLUE dev, median (min–max) over {protocol.seeds} seeds', '',
           table(protocol, summary, pretraining), '',
           f'Pretrained encoders that do not beat random init (median gap larger than both '
           f'seed spreads) on at least {replication_summary.MIN_TASKS_BEATEN} of the '
           f'{len(protocol.tasks)} tasks: '
           f'{", ".join(_failing_label(e, summary[e]) for e in failing) or "none"}'
           + (f' (not decided yet: {", ".join(names[e] for e in undecided)})' if undecided
              else '') + '.' + (f' {WHY_NOT_BEATING_RANDOM}' if failing else ''), '',
           '## The seed papers\' claims at this scale', '']
  lines += [f'- {paper_sentence(*claim, summary)}' for claim in PAPER_CLAIMS]
  other_runs = pretraining_runs_section(protocol, summary)
  lines += other_runs
  lines += ['', '## Seed 1 at each learning rate', '',
            'The runs that chose each rate in the table above'
            + (' (other pretraining runs\' are in their own sweeps\' reports)' if other_runs
               else '') + '.', '',
            '| encoder | ' + ' | '.join(protocol.tasks) + ' |', '|---' * (1 + len(protocol.tasks))
            + '|']
  for encoder, entry in summary.items():
    lines.append(f'| {names[encoder]} | ' + ' | '.join(
        ', '.join(f'{rate}: {"—" if value is None else f"{100 * value:.1f}"}'
                  for rate, value in task_entry['seed_one'].items())
        for task_entry in entry['tasks'].values()) + ' |')
  top = finetune_protocols.format_rate(max(protocol.learning_rates))
  edge = ', '.join(f'{names[e]} {finetune_protocols.GLUE_TASKS[t][0]}'
                   for e, t in replication_summary.at_grid_top(protocol, summary)) or 'none'
  lines += ['', f'Rate chosen at the grid\'s largest ({top}), so a larger one might score '
            f'better: {edge}.']
  return '\n'.join(lines) + '\n'


def pretraining_runs_section(protocol, summary: dict) -> list[str]:
  """The report's lines on encoders pretrained more than once; none when there are none."""
  repeated = {encoder: entry['pretraining_runs'] for encoder, entry in summary.items()
              if len(entry['pretraining_runs']) > 1}
  if not repeated:
    return []
  task_names = [finetune_protocols.GLUE_TASKS[task][0] for task in protocol.tasks]
  lines = ['', '## Pretraining runs', '',
           'Encoders pretrained more than once at this budget, each run fine-tuned with the '
           'protocol above (sweeps given by `--other_sweeps`; medians over seeds at each run\'s '
           'chosen rates, and whether they beat the random init above by more than the seed '
           'spread). In the sentences above, the mean of a row group\'s averages is the '
           'encoder\'s side of a gap, and their range counts as seed spread.', '',
           '| encoder | pretraining seed | sweep | ' + ' | '.join(task_names) +
           f' | average | beats random init ({" / ".join(task_names)}) |',
           '|---' * (5 + len(task_names)) + '|']
  for encoder, runs in repeated.items():
    for run in runs:
      seed = 'unseeded' if run['pretraining_seed'] is None else run['pretraining_seed']
      medians = ' | '.join(f'{100 * run["medians"][task]:.1f}' for task in protocol.tasks)
      lines.append(f'| {replication.ENCODER_NAMES[encoder]} | {seed} | {run["sweep"]} | '
                   f'{medians} | {100 * run["average"]:.1f} | '
                   f'{flags_text(run["beats_random"])} |')
  return lines


def load_pyplot():
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  return pyplot


def plot_pretraining(pretraining: dict, path: str) -> None:
  """Held-out MLM accuracy against training FLOPs, every objective on one figure."""
  pyplot = load_pyplot()
  figure, axis = pyplot.subplots(figsize=(6, 4))
  for objective, result in pretraining.items():
    rows = [row for row in result['curve'] if 'mlm_accuracy' in row]
    axis.plot([row['flops'] for row in rows], [row['mlm_accuracy'] for row in rows], marker='.',
              label=replication.ENCODER_NAMES[objective])
  axis.set(xlabel='training FLOPs', ylabel='held-out MLM accuracy')
  axis.grid(alpha=0.3)
  axis.legend(fontsize=7)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  pyplot.close(figure)


def plot_glue(protocol, summary: dict, path: str) -> None:
  """One panel per task: medians with min-max bars; random init's median a dashed line."""
  pyplot = load_pyplot()
  figure, axes = pyplot.subplots(1, len(protocol.tasks), figsize=(4.5 * len(protocol.tasks), 3.8),
                                 squeeze=False)
  pretrained = [e for e in replication.ENCODERS if e != replication.RANDOM]
  for axis, task in zip(axes[0], protocol.tasks):
    entries = [summary[e]['tasks'][task] for e in pretrained]
    shown = [(i, e) for i, e in enumerate(entries) if e['values']]
    if shown:
      axis.errorbar([i for i, _ in shown], [100 * e['median'] for _, e in shown],
                    yerr=[[100 * (e['median'] - e['min']) for _, e in shown],
                          [100 * (e['max'] - e['median']) for _, e in shown]],
                    fmt='o', capsize=4)
    floor = summary[replication.RANDOM]['tasks'][task]
    if floor['values']:
      axis.axhline(100 * floor['median'], color='gray', linestyle='--',
                   label='random init (median)')
      axis.legend(fontsize=7)
    axis.set_xticks(range(len(pretrained)),
                    [replication.ENCODER_NAMES[e] for e in pretrained], rotation=45, fontsize=7)
    name, metric = finetune_protocols.GLUE_TASKS[task]
    axis.set_title(f'{name} dev {metric} x 100')
    axis.grid(alpha=0.3)
  figure.tight_layout()
  figure.savefig(path, dpi=100)
  pyplot.close(figure)


def write_report(out_dir: str, learning_dir: str, protocol, recipe, bert_steps: int,
                 command: str, other_sweeps=(), random_init_dir=None) -> str:
  """Writes replication.{md,json}, pretraining.png and glue.png to `out_dir`; returns the table.

  Reads the committed unit results in `out_dir`, `other_sweeps` and `random_init_dir`
  (`summarize`) and the learning results in `learning_dir`; `command` is the tools/replicate.py
  command line the report names.
  """
  os.makedirs(out_dir, exist_ok=True)
  pretraining = learning_report.load_results(learning_dir)
  summary = replication_summary.summarize(protocol, out_dir, other_sweeps, random_init_dir)
  head = preamble(protocol, recipe, bert_steps, pretraining,
                  os.path.relpath(os.path.join(learning_dir, 'learning.md'), out_dir), command,
                  random_init_dir and os.path.relpath(random_init_dir, out_dir))
  atomic_files.write_text(os.path.join(out_dir, 'replication.md'),
                          markdown(protocol, summary, pretraining, head))
  failing, _ = replication_summary.not_beating_random(summary)
  atomic_files.write_json(os.path.join(out_dir, 'replication.json'), dict(
      encoders=summary, not_beating_random=failing,
      pretraining={objective: {key: result['curve'][-1].get(key)
                               for key in ('flops', 'step', 'train_seconds')}
                   for objective, result in pretraining.items() if result['curve']},
      papers=[paper_sentence(*claim, summary) for claim in PAPER_CLAIMS],
      protocol=dataclasses.asdict(protocol)))
  if pretraining:
    plot_pretraining(pretraining, os.path.join(out_dir, 'pretraining.png'))
  plot_glue(protocol, summary, os.path.join(out_dir, 'glue.png'))
  return table(protocol, summary, pretraining)
