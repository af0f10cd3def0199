"""The seed papers' claims judged on the released encoders: one sentence per claim.

Each claim is "objective A pretrains a better encoder than objective B at equal compute" (the
papers' GLUE tables). It is judged per budget on four instruments: BLiMP zero-shot (the kept
encoder's own score, `kept_encoder_method`) and the fine-tuning protocol's three GLUE tasks. On
each instrument and pretraining run (A's and B's releases of one seed), A is
  ahead   when the paired 95% interval of A minus B is above 0 and the gap exceeds the
          fine-tuning seed spread of both cells (BLiMP scoring has no seeds: the interval alone);
  behind  when the same holds for B minus A;
  level   otherwise.
Over the runs of a budget, an instrument *holds* the claim when A is ahead on every run, and
*reverses* it when A is behind on every run, both only with two or more pretraining runs: a gap
that one pretraining seed shows and the other does not is the seed's, not the objective's. With
one run the outcome is given as provisional. The frozen probes are shown beside, as gaps only:
they keep no predictions to resample, so they carry no interval and decide nothing.
"""

import collections
import dataclasses
import os
from typing import Optional

import numpy as np

from teams_lab import finetune_protocols
from teams_lab import finetuning_report
from teams_lab import minimal_pairs_report
from teams_lab import probing
from teams_lab import release_finetuning
from teams_lab import released_runs
from teams_lab import replication
from teams_tf.utils import atomic_files

AHEAD, BEHIND, LEVEL = 'ahead', 'behind', 'level'
BLIMP = 'blimp'
# The kept encoder's BLiMP score, the first of these its pretrainer has (network 'kept encoder'):
# the word-level masked PLL where the kept encoder has the MLM head (BERT, TACO, SCRIPT), else the
# one-pass score of its own head (ELECTRA's and TEAMS' RTD, MWS-only's MWS, COCO-LM's CLM).
KEPT_ENCODER_METHODS = ('masked_lm_word_l2r', 'rtd', 'mws', 'clm', 'self_critic', 'masked_lm')
INSTRUMENT_NAMES = {BLIMP: 'BLiMP', 'sst2': 'SST-2', 'cola': 'CoLA', 'stsb': 'STS-B'}


@dataclasses.dataclass(frozen=True)
class Claim:
  """`better` pretrains a better encoder than `worse`, as `paper` reports in `where`."""
  paper: str
  better: str
  worse: str
  where: str


CLAIMS = (
    Claim('ELECTRA', 'electra', 'bert', 'TEAMS Table 1, ELECTRA over BERT at each size'),
    Claim('TEAMS', 'teams', 'electra', 'TEAMS Table 1'),
    Claim('COCO-LM', 'coco_lm', 'bert', 'COCO-LM Table 1'),
    Claim('COCO-LM', 'coco_lm', 'electra', 'COCO-LM Table 1'),
    Claim('TACO', 'taco', 'bert', 'TACO Table 1, BERT-small'),
    Claim('SCRIPT', 'script', 'electra', 'SCRIPT Table 2, small'),
)


def outcome(gap: float, interval: tuple[float, float], spread: float = 0.0) -> str:
  """AHEAD, BEHIND or LEVEL for one comparison (see the module docstring)."""
  if interval[0] > 0 and gap > spread:
    return AHEAD
  if interval[1] < 0 and -gap > spread:
    return BEHIND
  return LEVEL


def kept_encoder_method(result: dict) -> Optional[str]:
  """The BLiMP method of a `teams-minimal-pairs` result that scores the kept encoder."""
  methods = result['methods']
  return next((m for m in KEPT_ENCODER_METHODS
               if m in methods and 'kept encoder' in methods[m]['network']), None)


def blimp_comparisons(results: dict[str, dict]) -> dict[tuple[str, str, str, str], dict]:
  """(budget, group, A, B) -> A minus B on BLiMP, for every two releases of one group.

  `results` are the BLiMP units (`minimal_pairs_report.load_results`); only releases count.
  """
  runs = {}
  for name, result in results.items():
    try:
      objective, budget, seed = released_runs.parse_run(name)
    except ValueError:
      continue  # The unigram anchor.
    if '_random_init' in objective or kept_encoder_method(result) is None:
      continue
    method = kept_encoder_method(result)
    runs[(budget, release_finetuning.group_name(budget, seed), objective)] = (
        result['methods'][method], method)
  found = {}
  for claim in CLAIMS:
    for (budget, group, objective), (better, method) in runs.items():
      if objective != claim.better or (budget, group, claim.worse) not in runs:
        continue
      worse, worse_method = runs[(budget, group, claim.worse)]
      interval = minimal_pairs_report.paired_bootstrap(
          [minimal_pairs_report.pair_bits(better)], [minimal_pairs_report.pair_bits(worse)])
      gap = better['mean'] - worse['mean']
      found[(budget, group, claim.better, claim.worse)] = dict(
          gap=gap, interval=interval, outcome=outcome(gap, interval),
          methods=[method, worse_method])
  return found


def glue_comparisons(cells: dict[tuple[str, str, str], dict]
                     ) -> dict[tuple[str, str, str, str, str], dict]:
  """(budget, group, A, B, task) -> A minus B fine-tuned, from `finetuning_report.finished_cells`.

  The cells' `draws` share their dev resamples per task, so their difference is the paired
  bootstrap of the gap of seed means.
  """
  found = {}
  for claim in CLAIMS:
    for (group, encoder, task), better in cells.items():
      worse = cells.get((group, claim.worse, task))
      if encoder != claim.better or worse is None:
        continue
      gap = better['mean'] - worse['mean']
      interval = tuple(float(v) for v in np.percentile(better['draws'] - worse['draws'],
                                                       [2.5, 97.5]))
      spread = max(better['spread'], worse['spread'])
      budget = release_finetuning.group_budget(group)
      found[(budget, group, claim.better, claim.worse, task)] = dict(
          gap=gap, interval=interval, spread=spread, outcome=outcome(gap, interval, spread),
          seeds=[better['seeds'], worse['seeds']])
  return found


def probe_gaps(probes: dict[str, dict[str, list[float]]]) -> dict[tuple[str, str, str, str], dict]:
  """(budget, group, A, B) -> {task: last-layer probe score of A minus B}.

  `probes` are task -> the probe file's `scores` (release name -> [embeddings, layer 1, ...]).
  """
  found = collections.defaultdict(dict)
  for task, scores in probes.items():
    last = {}
    for name, row in scores.items():
      try:
        objective, budget, seed = released_runs.parse_run(name)
      except ValueError:
        continue  # Random init.
      last[(budget, release_finetuning.group_name(budget, seed), objective)] = row[-1]
    for claim in CLAIMS:
      for (budget, group, objective), value in last.items():
        if objective == claim.better and (budget, group, claim.worse) in last:
          found[(budget, group, claim.better, claim.worse)][task] = (
              value - last[(budget, group, claim.worse)])
  return dict(found)


def verdict(outcomes: list[str]) -> str:
  """An instrument's verdict over the pretraining runs of a budget ('' when none was run)."""
  if not outcomes:
    return ''
  if len(outcomes) == 1:
    return f'{outcomes[0]} (one run)'
  if all(o == AHEAD for o in outcomes):
    return 'holds'
  if all(o == BEHIND for o in outcomes):
    return 'reversed'
  return 'not seen'


def judge(blimp: dict, glue: dict, tasks: tuple[str, ...]) -> list[dict]:
  """One entry per claim and budget measured on some instrument (a claim measured nowhere: one
  entry saying so), with per-run outcomes, verdicts and the sentence.

  Args:
    blimp: `blimp_comparisons`.
    glue: `glue_comparisons`.
    tasks: the protocol's GLUE tasks.
  """
  budgets = sorted({key[0] for key in blimp} | {key[0] for key in glue}) or ['']
  found = []
  for claim in CLAIMS:
    entries = []
    for budget in budgets:
      instruments = {}
      for instrument in (BLIMP,) + tasks:
        runs = ({key[1]: value for key, value in blimp.items()
                 if key[0] == budget and key[2:] == (claim.better, claim.worse)}
                if instrument == BLIMP else
                {key[1]: value for key, value in glue.items()
                 if key[0] == budget and key[2:] == (claim.better, claim.worse, instrument)})
        instruments[instrument] = dict(
            runs=runs, verdict=verdict([runs[g]['outcome'] for g in sorted(runs)]))
      # A budget where the claim has no pair of runs yet is named only if no budget has one.
      if any(value['runs'] for value in instruments.values()) or budget == budgets[-1] and (
          not entries):
        entries.append(dict(claim=dataclasses.asdict(claim), budget=budget,
                            instruments=instruments,
                            sentence=sentence(claim, budget, instruments)))
    found += entries
  return found


def _names(instruments: list[str]) -> str:
  return ', '.join(INSTRUMENT_NAMES[i] for i in instruments)


# Verdicts in the order a sentence names them.
_SENTENCE_ORDER = ('holds', 'reversed', 'not seen', f'{AHEAD} (one run)', f'{LEVEL} (one run)',
                   f'{BEHIND} (one run)')


def sentence(claim: Claim, budget: str, instruments: dict[str, dict]) -> str:
  """'<paper>: A > B (<where>), <budget>: holds on BLiMP, SST-2; not seen on CoLA; ...'."""
  by_verdict = collections.defaultdict(list)
  for instrument, value in instruments.items():
    by_verdict[value['verdict'] or 'not measured yet'].append(instrument)
  better, worse = (replication.ENCODER_NAMES[o] for o in (claim.better, claim.worse))
  at = f'{budget.lstrip("_")} budget' if budget else 'base budget'
  parts = [f'{v} on {_names(by_verdict[v])}' for v in _SENTENCE_ORDER if by_verdict.get(v)]
  if any(v.endswith('(one run)') for v in by_verdict):
    parts.append('a second pretraining run decides')
  if by_verdict.get('not measured yet'):
    parts.append(f'not measured yet on {_names(by_verdict["not measured yet"])}')
  return f'{claim.paper}: {better} > {worse} ({claim.where}), {at}: ' + '; '.join(parts) + '.'


def _gap_text(value: Optional[dict]) -> str:
  if value is None:
    return '-'
  text = (f'{100 * value["gap"]:+.1f} ({100 * value["interval"][0]:+.1f} to '
          f'{100 * value["interval"][1]:+.1f})')
  return f'**{text}**' if value['outcome'] != LEVEL else text


def markdown(judged: list[dict], probes: dict, tasks: tuple[str, ...], command: str,
             protocol: str) -> str:
  """The verdicts page: one sentence per claim and budget, then the evidence per run."""
  lines = [
      '# The papers\' claims on the released encoders', '',
      f'`{command}`: each claim "A pretrains a better encoder than B" judged on BLiMP (the kept '
      f'encoder\'s own score) and on fine-tuning protocol `{protocol}` (SST-2, CoLA, STS-B dev, '
      'seed means), per pretraining run: A minus B with a paired 95% interval, in bold when '
      'decided (interval clear of 0 and gap beyond both cells\' fine-tuning seed spread). An '
      'instrument holds a claim when A is ahead on every pretraining run, reverses it when '
      'behind on every run, both with at least two runs, and does not see it when the runs '
      'disagree or one is level; one run is provisional.', '',
      '## Verdicts', '']
  lines += [f'- {entry["sentence"]}' for entry in judged]
  lines += ['', '## Evidence per pretraining run', '',
            '| claim | budget | run | ' + ' | '.join(INSTRUMENT_NAMES[i] for i in (BLIMP,) + tasks)
            + ' | probes (last layer): ' + ', '.join(INSTRUMENT_NAMES[t] for t in tasks) + ' |',
            '|---|---|---|' + '---:|' * (len(tasks) + 2)]
  for entry in judged:
    claim = entry['claim']
    label = (f'{replication.ENCODER_NAMES[claim["better"]]} > '
             f'{replication.ENCODER_NAMES[claim["worse"]]}')
    groups = sorted({g for value in entry['instruments'].values() for g in value['runs']})
    for group in groups:
      cells = [_gap_text(entry['instruments'][i]['runs'].get(group)) for i in (BLIMP,) + tasks]
      gaps = probes.get((entry['budget'], group, claim['better'], claim['worse']), {})
      probe = ', '.join(f'{100 * gaps[t]:+.1f}' if t in gaps else '-' for t in tasks)
      lines.append(f'| {label} | {entry["budget"].lstrip("_") or "base"} | {group} | '
                   + ' | '.join(cells) + f' | {probe} |')
  return '\n'.join(lines) + '\n'


def _probes(finetuning_dir: str, tasks: tuple[str, ...]) -> dict:
  """Task -> the probe file's scores, for the probes of `finetuning_report.PROBES` found."""
  found = {}
  for task, pooling in finetuning_report.PROBES:
    report = probing.read_report(finetuning_dir, task, pooling) if task in tasks else {}
    if report:
      found[task] = report['scores']
  return found


def write_report(finetuning_dir: str, protocol: str, minimal_pairs_dir: str, out_dir: str,
                 resample: finetuning_report.Resample, command: str) -> list[dict]:
  """Writes `<out_dir>/verdicts.md` and `.json` from the committed units; returns the verdicts.

  Args:
    finetuning_dir: `tools/benchmark_finetuning.py`'s out_dir (units and probe files).
    protocol: the fine-tuning protocol judged (`finetune_protocols.PROTOCOLS`).
    minimal_pairs_dir: `tools/benchmark_minimal_pairs.py`'s out_dir.
    out_dir: where the page goes.
    resample: `glue_metrics.resampled_headlines`.
    command: the command line the page names.
  """
  tasks = finetune_protocols.PROTOCOLS[protocol].tasks
  cells, _ = finetuning_report.finished_cells(finetuning_dir, protocol, resample)
  cells = {key: cell for key, cell in cells.items() if cell['complete']}
  judged = judge(blimp_comparisons(minimal_pairs_report.load_results(minimal_pairs_dir)),
                 glue_comparisons(cells), tasks)
  probes = probe_gaps(_probes(finetuning_dir, tasks))
  os.makedirs(out_dir, exist_ok=True)
  atomic_files.write_text(os.path.join(out_dir, 'verdicts.md'),
                          markdown(judged, probes, tasks, command, protocol))
  atomic_files.write_json(os.path.join(out_dir, 'verdicts.json'),
                          dict(protocol=protocol, verdicts=judged))
  return judged
