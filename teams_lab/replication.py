"""Compute-matched mini replication: every mini objective's kept encoder fine-tuned on GLUE.

Pretraining is the learning benchmark's (`learning.run_objective` with one `learning.Setup`, so
every objective trains to the same FLOP budget and its runs and result files are shared).
Each kept encoder, and a random-init encoder of the same shape, is then fine-tuned under one
`finetune_protocols.FineTuneProtocol`: seed 1 runs at every learning rate of the grid, the rate
with the best dev headline metric is kept, and seeds 2..N run at that rate only. A unit of work
is one (encoder, task, rate, seed) run of the Model Garden sweep (`finetuning/sweep.py`, which
this package may not import: the caller passes it in as `fine_tune`) in
`<work_dir>/replication_<budget>flops/<encoder>/<task>/lr_<rate>` (a sweep resumes what it finds
there, so another budget must not share it); its result is then copied to
`<out_dir>/<encoder>/<task>_lr<rate>_seed<k>.json`, and a unit with that file is never run
again, even when the work directory is gone. `replication_report` writes the report.
"""

import dataclasses
import json
import os
import time
from typing import Callable, Optional

import tensorflow as tf

from teams_lab import finetune_protocols
from teams_lab import learning
from teams_lab import learning_data
from teams_tf.utils import atomic_files
from teams_tf.utils import file_hashes

RANDOM = 'random'
# Mini variants under test (`learning.mini_runs`), each fine-tuned beside its objective: recipe
# changes, which the replication keeps only if they make pretraining matter, and paper ablations
# that ask why an objective does or does not (RECIPE_NOTES.md).
VARIANTS = ('electra_corrupt15', 'electra_text_rtd', 'electra_rtd10', 'electra_rtd5',
            'electra_rtd5_attention_head', 'electra_rtd5_teams_generator', 'teams_no_tie',
            'teams_no_mws', 'teams_no_mws_rtd50', 'teams_no_mws_no_tie')
ENCODERS = learning.OBJECTIVES + VARIANTS + (RANDOM,)
ENCODER_NAMES = {'bert': 'BERT', 'electra': 'ELECTRA', 'teams': 'TEAMS', 'mws': 'MWS-only',
                 'coco_lm': 'COCO-LM', 'taco': 'TACO', 'script': 'SCRIPT',
                 'electra_corrupt15': 'ELECTRA (15% corrupted)',
                 'electra_text_rtd': 'ELECTRA (RTD without [CLS]/[SEP])',
                 'electra_rtd10': 'ELECTRA (RTD weight 10)',
                 'electra_rtd5': 'ELECTRA (RTD weight 5)',
                 'electra_rtd5_attention_head': 'ELECTRA (RTD weight 5, attention head)',
                 'electra_rtd5_teams_generator': "ELECTRA (RTD weight 5, TEAMS' generator)",
                 'teams_no_tie': 'TEAMS (No Tie, Table 4)', 'teams_no_mws': 'TEAMS without MWS',
                 'teams_no_mws_rtd50': 'TEAMS without MWS (RTD weight 50)',
                 'teams_no_mws_no_tie': 'TEAMS without MWS or shared layer',
                 RANDOM: 'random init'}
# Every mini objective keeps the same encoder; the random-init one is built like BERT's.
SHAPE_FROM = 'bert'
# What a committed result written before a setting existed was run with.
_SETTING_DEFAULTS = dict(pretraining_seed=None, pooling='cls', standardize_regression=False,
                         heldout_examples=0)


@dataclasses.dataclass(frozen=True)
class Unit:
  """One fine-tuning run; `learning_rate` None while seed 1 has not tried the whole grid."""
  encoder: str
  task: str
  learning_rate: Optional[float]
  seed: int

  def __str__(self):
    rate = finetune_protocols.format_rate(self.learning_rate)
    return f'{self.encoder} {self.task} lr {rate} seed {self.seed}'


def unit_path(out_dir: str, unit: Unit) -> str:
  """The committed result file of a unit."""
  rate = finetune_protocols.format_rate(unit.learning_rate)
  return os.path.join(out_dir, unit.encoder, f'{unit.task}_lr{rate}_seed{unit.seed}.json')


def read_unit(out_dir: str, unit: Unit) -> Optional[dict]:
  """The committed result of a unit, or None when it has not run."""
  if unit.learning_rate is None or not os.path.exists(unit_path(out_dir, unit)):
    return None
  with open(unit_path(out_dir, unit)) as f:
    return json.load(f)


def _defined(value) -> float:
  """An undefined correlation (constant predictions: None or NaN) counts as 0."""
  return 0.0 if value is None or value != value else float(value)


def headline(result: dict) -> float:
  """A run's dev headline metric (0 when undefined)."""
  return _defined(result['metrics'][result['headline_metric']])


def selection_score(result: dict) -> float:
  """What a run scored on the held-out train slice at its chosen epoch (0 when undefined)."""
  selection = result['selection']
  return _defined(next(epoch['value'] for epoch in selection['epochs']
                       if epoch['step'] == selection['step']))


def choose_learning_rate(protocol: finetune_protocols.FineTuneProtocol, out_dir: str, encoder: str,
                         task: str) -> Optional[float]:
  """The grid's rate whose seed-1 run scored best (ties: the earlier rate): on the held-out
  slice with `protocol.heldout_examples`, else on dev.

  None until seed 1 has run at every rate of the grid.
  """
  seed_one = {rate: read_unit(out_dir, Unit(encoder, task, rate, 1))
              for rate in protocol.learning_rates}
  if any(result is None for result in seed_one.values()):
    return None
  score = selection_score if protocol.heldout_examples else headline
  return max(protocol.learning_rates, key=lambda rate: score(seed_one[rate]))


def plan(protocol: finetune_protocols.FineTuneProtocol, out_dir: str, encoders) -> list[Unit]:
  """Every unit in run order: encoder by encoder, seed 1 at each rate, then seeds 2..N.

  One encoder's cells are complete before the next begins, so a run stopped at any point
  leaves whole encoders to report and judge (a cell missing seeds is neither), not every
  encoder's sweep and no finished cell. Seeds 2..N have `learning_rate` None until their seed 1
  has tried the whole grid, so the list always has
  len(encoders) x len(tasks) x (len(learning_rates) + seeds - 1) units.
  """
  units = []
  for encoder in encoders:
    units += [Unit(encoder, task, rate, 1) for task in protocol.tasks
              for rate in protocol.learning_rates]
    for task in protocol.tasks:
      rate = choose_learning_rate(protocol, out_dir, encoder, task)
      units += [Unit(encoder, task, rate, seed) for seed in range(2, protocol.seeds + 1)]
  return units


# Minutes each stage took alone on 2 cores (README, benchmarks/learning/learning.md), for the
# plan a run prints before it starts; fine-tuning units use the committed units' own times.
_DATA_MINUTES = 15
_PRETRAINING_MINUTES = (40, 55)
_UNIT_MINUTES = 3


def outlook(protocol: finetune_protocols.FineTuneProtocol, out_dir: str, learning_dir: str,
            work_dir: str, encoders) -> str:
  """What a run of `encoders` will do before its report, and about how long it will take.

  Printed first, because the first step (the corpus vocabulary) takes minutes and the whole
  table takes hours; `--report_only` rewrites the report from the committed results alone.
  """
  units = plan(protocol, out_dir, encoders)
  done = [result for result in (read_unit(out_dir, unit) for unit in units) if result]
  seconds = [result['total_seconds'] for result in done if 'total_seconds' in result]
  unit_minutes = sum(seconds) / len(seconds) / 60 if seconds else _UNIT_MINUTES
  to_fine_tune = len(units) - len(done)
  to_pretrain = [encoder for encoder in encoders if encoder != RANDOM and not os.path.exists(
      learning.result_file(learning_dir, encoder))]
  # The data step runs first whatever is left to do (`learning.default_setup`).
  needs_data = not os.path.exists(learning_data.vocab_path(work_dir, learning.VOCAB_SIZE))
  parts = ([f'builds the corpus vocabulary and records in {work_dir} (about {_DATA_MINUTES} '
            'minutes, once)'] if needs_data else [])
  if to_pretrain:
    parts.append(f'pretrains {len(to_pretrain)} encoder(s) ({", ".join(to_pretrain)}; '
                 f'{_PRETRAINING_MINUTES[0]} to {_PRETRAINING_MINUTES[1]} minutes each)')
  parts.append(f'fine-tunes up to {to_fine_tune} of {len(units)} unit(s) (about '
               f'{unit_minutes:.1f} minutes each; an encoder whose pretraining checkpoint is no '
               f'longer in {work_dir} waits, as listed after the data step)')
  low = (needs_data * _DATA_MINUTES + len(to_pretrain) * _PRETRAINING_MINUTES[0]
         + to_fine_tune * unit_minutes)
  high = (needs_data * _DATA_MINUTES + len(to_pretrain) * _PRETRAINING_MINUTES[1]
          + to_fine_tune * unit_minutes)
  span = (f'{low / 60:.1f} hours' if low == high else
          f'{low / 60:.1f} to {high / 60:.1f} hours')
  return (f'This run {"; ".join(parts)}: at most about {span} on 2 cores. To rewrite the '
          'report from the committed results alone, in seconds, pass --report_only.')


def pretrain(setup: learning.Setup, flops: dict[str, float], encoders,
             log=print) -> dict[str, str]:
  """Pretrains (or reuses) what `encoders` need, each through `learning.run_objective`.

  Every objective gets the same `setup`, so the same data and FLOP budget; the random-init
  encoder needs `SHAPE_FROM`'s run for its shape.

  Returns:
    Objective -> its run directory, for the runs that finished and still hold their final
    checkpoint (`learning.final_run_dir`; the others are logged).
  """
  objectives = [encoder for encoder in encoders if encoder != RANDOM]
  if RANDOM in encoders and SHAPE_FROM not in objectives:
    objectives.append(SHAPE_FROM)
  run_dirs = {}
  for objective in objectives:
    result = learning.run_objective(objective, setup, flops[objective], log=log)
    if result is None:
      continue
    try:
      run_dirs[objective] = learning.final_run_dir(setup, objective, result)
    except ValueError as e:
      log(f'{objective}: {e}')
  return run_dirs


def _same_vocabulary(kept: str, wanted: str) -> bool:
  """Whether vocabulary files `kept` and `wanted` both exist and have one sha256.

  Every release carries its own copy of the corpus vocabulary (hashed as `file_hashes.sha256`), so
  records converted through one release's vocab.txt serve the others'.
  """
  try:
    return file_hashes.sha256(kept) == file_hashes.sha256(wanted)
  except tf.errors.NotFoundError:
    return False


def prepare_glue(protocol: finetune_protocols.FineTuneProtocol, glue_dir: str, vocab_file: str,
                 data_dir: str, convert: Callable[..., None], log=print) -> None:
  """Converts each task once to `<data_dir>/<task>`; a task with a meta_data.json is kept.

  Args:
    protocol: its tasks, T, casing and train subsets.
    glue_dir: the GLUE download, one folder per task (`GLUE_TASKS`).
    vocab_file: the corpus vocabulary of the pretraining runs.
    data_dir: where the records go (`sweep`'s data_dir).
    convert: writes one task's records, called with the keyword arguments task, source,
      vocab_file, lower_case, max_seq_length, output_dir, max_train_examples, subset_seed and
      heldout_examples (e.g. `finetuning.glue.convert_tsv`).

  Raises:
    ValueError: a task folder is missing, or a kept conversion has other settings (a vocabulary
      at another path with the same contents is the same setting).
  """
  for task in protocol.tasks:
    fields = dict(vocab_file=os.path.abspath(vocab_file), lower_case=protocol.lower_case,
                  max_seq_length=protocol.max_seq_length,
                  max_train_examples=dict(protocol.max_train_examples).get(task),
                  heldout_examples=protocol.heldout_examples)
    output_dir = os.path.join(data_dir, task)
    meta_path = os.path.join(output_dir, 'meta_data.json')
    if os.path.exists(meta_path):
      with open(meta_path) as f:
        meta = json.load(f)
      kept = dict(meta, vocab_file=os.path.abspath(meta['vocab_file']),
                  heldout_examples=meta.get('heldout_data_size', 0))
      differ = {key: kept.get(key) for key, value in fields.items() if kept.get(key) != value
                and not (key == 'vocab_file' and _same_vocabulary(kept[key], value))}
      if differ:
        raise ValueError(f'{meta_path} was converted with {differ}, not {fields}; remove '
                         f'{output_dir} to convert it again.')
      log(f'GLUE {task}: converted ({meta_path}); skipping')
      continue
    folder = finetune_protocols.GLUE_TASKS[task][0]
    source = os.path.join(glue_dir, folder)
    if not os.path.isdir(source):
      raise ValueError(f'--glue_dir={glue_dir} lacks {folder}/; point it at the GLUE download '
                       '(shared/data/glue).')
    log(f'GLUE {task}: converting {source} -> {output_dir}')
    convert(task=task, source=source, output_dir=output_dir, subset_seed=protocol.subset_seed,
            **fields)


@dataclasses.dataclass(frozen=True)
class Replication:
  """What the fine-tuning units share.

  Attributes:
    protocol: the fine-tuning protocol.
    out_dir: committed unit results and the report.
    work_dir: the sweeps' run directories go to `<work_dir>/replication[_seed<N>]_<budget>flops`
      (`learning.budget_dir`, `learning.seeded`).
    data_dir: the converted GLUE tasks (`prepare_glue`).
    run_dirs: objective -> its pretraining run directory (`pretrain`).
    max_train_flops: the pretraining budget, recorded in every pretrained unit's result.
    pretraining_seed: the pretraining runs' seed (`learning.Setup.seed`), recorded likewise.
  """
  protocol: finetune_protocols.FineTuneProtocol
  out_dir: str
  work_dir: str
  data_dir: str
  run_dirs: dict[str, str]
  max_train_flops: float
  pretraining_seed: Optional[int] = None


def _overrides(replication: Replication, unit: Unit) -> str:
  """The unit's rate and the protocol's head, as a Model Garden override string."""
  protocol = replication.protocol
  overrides = [f'{finetune_protocols.LEARNING_RATE_FIELD}={unit.learning_rate}']
  if protocol.task_pooling(unit.task) != 'cls':
    overrides.append(f'task.model.pooling={protocol.task_pooling(unit.task)}')
  if protocol.standardize_regression and unit.task == 'stsb':
    with open(os.path.join(replication.data_dir, unit.task, 'meta_data.json')) as f:
      meta = json.load(f)
    overrides += [f'task.model.regression_mean={meta["train_label_mean"]}',
                  f'task.model.regression_std={meta["train_label_std"]}']
  return ','.join(overrides)


def sweep_settings(replication: Replication, unit: Unit) -> dict:
  """The `sweep.SweepSettings` fields of one unit: one task, one seed, the unit's rate."""
  protocol = replication.protocol
  pretrained = unit.encoder != RANDOM
  return dict(
      tasks=(unit.task,), seeds=f'{unit.seed},', size=protocol.size,
      data_dir=replication.data_dir,
      init_checkpoint=replication.run_dirs[unit.encoder] if pretrained else '',
      output_dir=os.path.join(
          learning.budget_dir(replication.work_dir,
                              learning.seeded('replication', replication.pretraining_seed),
                              replication.max_train_flops),
          unit.encoder, unit.task, f'lr_{finetune_protocols.format_rate(unit.learning_rate)}'),
      epochs=protocol.epochs, params_override=_overrides(replication, unit),
      encoder_from=None if pretrained else replication.run_dirs[SHAPE_FROM],
      select_epoch=bool(protocol.heldout_examples))


def unit_settings(replication: Replication, unit: Unit) -> dict:
  """What a committed result must have been run with to be reused."""
  protocol = replication.protocol
  pretrained = unit.encoder != RANDOM
  return dict(size=protocol.size, epochs=protocol.epochs, max_seq_length=protocol.max_seq_length,
              lower_case=protocol.lower_case, subset_seed=protocol.subset_seed,
              max_train_examples=dict(protocol.max_train_examples).get(unit.task),
              pretraining_flops=replication.max_train_flops if pretrained else None,
              pretraining_seed=replication.pretraining_seed if pretrained else None,
              pooling=protocol.task_pooling(unit.task),
              standardize_regression=protocol.standardize_regression and unit.task == 'stsb',
              heldout_examples=protocol.heldout_examples)


def committed_settings(result: dict) -> dict:
  """The settings a committed result was run with; one written before a setting existed has
  that setting's default (no pretraining seed, the [CLS] head, no held-out slice)."""
  return {**_SETTING_DEFAULTS, **(result.get('settings') or {})}


def check_committed(replication: Replication, encoders) -> None:
  """Raises ValueError when a committed result of `encoders` was run with other settings
  (`committed_settings`)."""
  for unit in plan(replication.protocol, replication.out_dir, encoders):
    result = read_unit(replication.out_dir, unit)
    if result is not None and committed_settings(result) != unit_settings(replication, unit):
      raise ValueError(f'{unit_path(replication.out_dir, unit)} was run with other settings '
                       f'({result.get("settings")}); move it away or choose another --out_dir.')


def glue_data_dir(work_dir: str, vocab_size: int,
                  protocol: Optional[finetune_protocols.FineTuneProtocol] = None) -> str:
  """Where `prepare` converts the GLUE tasks for a vocabulary of `vocab_size` tokens:
  `glue_<size>`, or `glue_<size>_heldout<n>` for a protocol with held-out slices."""
  slices = f'_heldout{protocol.heldout_examples}' if protocol and protocol.heldout_examples else ''
  return os.path.join(work_dir, f'glue_{vocab_size}{slices}')


def prepare(protocol: finetune_protocols.FineTuneProtocol, encoders, setup: learning.Setup,
            flops: dict[str, float], glue_dir: str, out_dir: str, work_dir: str,
            convert: Callable[..., None], log=print) -> Replication:
  """What the units of `encoders` need: their pretraining runs (`pretrain`), the GLUE records
  (`prepare_glue`, in `<work_dir>/glue_<vocabulary size>`) and committed results checked against
  the protocol (`check_committed`).

  Raises:
    ValueError: a GLUE folder is missing, a kept conversion or committed result has other
      settings.
  """
  run_dirs = pretrain(setup, flops, encoders, log=log)
  data_dir = glue_data_dir(work_dir, setup.vocab_size, protocol)
  prepare_glue(protocol, glue_dir, setup.vocab_file, data_dir, convert, log=log)
  replication = Replication(protocol, out_dir, work_dir, data_dir, run_dirs,
                            setup.max_train_flops, setup.seed)
  check_committed(replication, encoders)
  return replication


def _checkpoint_dir(replication: Replication, encoder: str) -> Optional[str]:
  run_dir = replication.run_dirs.get(SHAPE_FROM if encoder == RANDOM else encoder)
  return run_dir if run_dir and os.path.exists(os.path.join(run_dir, 'checkpoint')) else None


def run_unit(replication: Replication, unit: Unit, fine_tune: Callable[[dict], None],
             **settings) -> dict:
  """Fine-tunes one unit (`run`'s `fine_tune`) and commits its result with `unit_settings`
  and `settings`; returns the result."""
  fields = sweep_settings(replication, unit)
  fine_tune(fields)
  with open(os.path.join(fields['output_dir'], unit.task, f'seed_{unit.seed}',
                         'result.json')) as f:
    result = json.load(f)
  result.update(encoder=unit.encoder, learning_rate=unit.learning_rate,
                settings={**unit_settings(replication, unit), **settings})
  os.makedirs(os.path.dirname(unit_path(replication.out_dir, unit)), exist_ok=True)
  atomic_files.write_json(unit_path(replication.out_dir, unit), result)
  return result


def run(replication: Replication, encoders, fine_tune: Callable[[dict], None],
        report: Callable[[], str], log=print, clock=time.monotonic) -> None:
  """Fine-tunes, in `plan` order, every unit of `encoders` without a committed result.

  Args:
    replication: what the units share.
    encoders: encoders to fine-tune (keys of `ENCODER_NAMES`).
    fine_tune: runs one sweep from `sweep_settings`' fields (`sweep.SweepSettings(**fields)`,
      then `sweep.prepare` and `sweep.run`), which leaves its result in
      `<output_dir>/<task>/seed_<k>/result.json`.
    report: rewrites the report from the committed results and returns its table, printed after
      each unit.
    log: prints a line.
    clock: seconds, for the ETA from the mean duration of this session's units.
  """
  out_dir = replication.out_dir
  blocked = {encoder for encoder in encoders if _checkpoint_dir(replication, encoder) is None}
  durations = []
  while True:
    units = plan(replication.protocol, out_dir, encoders)
    to_do = [(position, unit) for position, unit in enumerate(units, 1)
             if unit.encoder not in blocked and read_unit(out_dir, unit) is None]
    if not durations:
      done = sum(read_unit(out_dir, unit) is not None for unit in units)
      log(f'{done} of {len(units)} fine-tuning unit(s) done, {len(to_do)} to run')
      for encoder in sorted(blocked):
        source = SHAPE_FROM if encoder == RANDOM else encoder
        log(f'{encoder}: waits for a checkpoint of the {source} pretraining run '
            f'({replication.run_dirs.get(source, "not finished, or its checkpoint is gone")}); '
            'if its learning result exists but the run directory is gone, move the result away '
            'to pretrain again.')
    if not to_do:
      return
    position, unit = to_do[0]
    log(f'[{position}/{len(units)}] {unit}')
    start = clock()
    result = run_unit(replication, unit, fine_tune)
    durations.append(clock() - start)
    left = len(to_do) - 1
    log(f'done {unit}: dev {result["headline_metric"]} {headline(result):.4f} in '
        f'{durations[-1] / 60:.1f} min; {left} unit(s) left, ETA '
        f'{left * sum(durations) / len(durations) / 3600:.1f} h')
    log(report())
