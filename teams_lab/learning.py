"""Learning benchmark: held-out metrics of every mini objective against training FLOPs and time.

Each objective's `<objective>_mini` experiment pretrains with `python -m teams_tf.train` on a
corpus (the shared English Wikipedia extract: wiki_00-48 for training, wiki_49 held out) at one
training-FLOP budget (`trainer.max_train_flops`), evaluating every `validation_interval` steps.
A run is one unit of work: it resumes from its own checkpoints when interrupted, and its result
file (`<out_dir>/<objective>.json`: the validation curve with FLOPs and wall time) is written when
it ends, so the report fills in across sessions. The report (`learning_report`: `learning.md`,
`learning.json`, `learning.png`) puts each objective's last evaluation beside its targets and
trivial baselines.
"""

import dataclasses
import json
import os
import subprocess
import sys
import time
from typing import Optional

import tensorflow as tf

from official.core import exp_factory

from teams_lab import child_processes
from teams_lab import learning_data
from teams_lab import research_variants  # noqa: F401  (registers the mini variants)
from teams_tf.data import tokenization
from teams_tf.registry import experiments
from teams_tf.training import budgets
from teams_tf.training import checkpoints
from teams_tf.training import experiment_flops
from teams_tf.training import run_summary
from teams_tf.training import schedules
from teams_tf.utils import atomic_files
from teams_tf.utils import hardware

OBJECTIVES = ('bert', 'electra', 'teams', 'mws', 'coco_lm', 'taco', 'script')
# The budget of the learning benchmark and of the GLUE replication, in BERT-mini steps: the
# issue's reference recipe took about 9,000 steps to pass 43% held-out MLM accuracy, and at
# 3,000 the pretrained encoders barely beat a random-init one on GLUE
# (teams_lab/RECIPE_NOTES.md, "The budget").
BERT_STEPS = 9000
# Target size of the corpus vocabulary (benchmarks/vocab.md) and steps between evaluations.
VOCAB_SIZE = 8192
VALIDATION_INTERVAL = 500


@dataclasses.dataclass(frozen=True)
class Target:
  """A held-out metric that must reach `threshold`; `baseline` names its trivial level.

  `baseline` is a metric name reported in the same evaluation (e.g. the context-free MLM
  accuracy) or a number written as a string (e.g. '0.5' for an AUC).
  """
  metric: str
  threshold: float
  baseline: str


# Issue targets (held-out, within the budget). The MLM baseline is frequency guessing plus
# copying (`tasks/mlm_baseline.py`); the RTD baseline ranks tokens by identity alone
# (`tasks/rtd_baseline.py`); chance for other AUCs is 0.5, for MWS 1/(K + 1) = 1/6 (K = 5).
TARGETS = {
    'bert': (Target('mlm_accuracy', 0.45, 'mlm_context_free_accuracy'),),
    'electra': (Target('mlm_accuracy', 0.30, 'mlm_context_free_accuracy'),
                Target('rtd_auc', 0.85, 'rtd_context_free_auc')),
    'teams': (Target('mlm_accuracy', 0.30, 'mlm_context_free_accuracy'),
              Target('rtd_auc', 0.85, 'rtd_context_free_auc'),
              Target('mws_accuracy', 0.5, '0.1667')),
    'mws': (Target('mlm_accuracy', 0.30, 'mlm_context_free_accuracy'),
            Target('mws_accuracy', 0.5, '0.1667')),
    # COCO-LM's main task is corrective LM: the copy (RTD) AUC; its auxiliary MLM as for ELECTRA.
    'coco_lm': (Target('mlm_accuracy', 0.30, 'mlm_context_free_accuracy'),
                Target('copy_auc', 0.85, '0.5')),
    'taco': (Target('mlm_accuracy', 0.30, 'mlm_context_free_accuracy'),),
    # SCRIPT's critic scores its own samples, which get harder as its MLM improves.
    'script': (Target('mlm_accuracy', 0.30, 'mlm_context_free_accuracy'),
               Target('disc_auc', 0.75, '0.5')),
}


@dataclasses.dataclass
class Setup:
  """Where the data is and what every run shares.

  Attributes:
    train_input: training input_path (files or globs, comma-separated).
    validation_input: held-out input_path.
    input_format: 'text' or 'tfrecord' (records from tools/create_pretraining_data.py).
    vocab_file: the WordPiece vocabulary of the inputs.
    vocab_size: its size.
    max_train_flops: the training-FLOP budget of every run.
    validation_interval: steps between evaluations.
    validation_steps: batches per evaluation.
    work_dir: run directories (checkpoints, summaries) go to `<work_dir>/<objective>_<budget>`
      (`run_dir`).
    out_dir: result files and the report.
    seed: `teams_tf.train --seed` of every run, which seeds weight initialization and the
      objectives' sampling; None (the default, and the first runs') leaves them unseeded. The
      pretraining seed is what tells a recipe's effect from one run's luck; runs of another seed
      go to their own directories, and their results need their own `out_dir`.
    keep_checkpoints: keep every checkpoint (one per `trainer.checkpoint_interval` steps), not
      the recipe's last `trainer.max_to_keep`, so that the encoder can be fine-tuned at points
      along the run (`tools/run_glue.py --init_checkpoint=<run_dir>/ckpt-<step>`). Training is
      the same either way, so results compare across it.
  """
  train_input: str
  validation_input: str
  input_format: str
  vocab_file: str
  vocab_size: int
  max_train_flops: float
  validation_interval: int
  validation_steps: int
  work_dir: str
  out_dir: str
  seed: Optional[int] = None
  keep_checkpoints: bool = False


# A CheckpointManager bound no run reaches: 500-step checkpoints of a 500M-step run.
_EVERY_CHECKPOINT = 1_000_000


def _comparable(setup: dict) -> dict:
  """A written setup with the defaults of fields added since, and without `out_dir` and
  `keep_checkpoints`: where a result file sits and how many checkpoints its run kept say nothing
  about the run (a copy in another clone is reused)."""
  defaults = {field.name: field.default for field in dataclasses.fields(Setup)
              if field.default is not dataclasses.MISSING}
  return {**defaults, **setup, 'out_dir': None, 'keep_checkpoints': None}


def mini_runs() -> dict[str, str]:
  """Run name -> its experiment: every objective, then every registered mini variant.

  A run is named by its experiment without `_mini`: `electra` trains `electra_mini`, and
  `electra_corrupt15` the variant `electra_mini_corrupt15`, a recipe change under test. The
  experiments are registered by importing this module (the variants: `research_variants`).
  """
  runs = {objective: f'{objective}_mini' for objective in OBJECTIVES}
  for name in experiments.experiment_names():
    try:
      objective, size, variant = experiments.split_name(name)
    except ValueError:  # A fine-tuning experiment.
      continue
    if size == 'mini' and variant:
      runs[f'{objective}_{variant}'] = name
  return runs


def objective_of(run: str) -> str:
  """The objective a run pretrains with (whose targets it is held to)."""
  return experiments.split_name(mini_runs()[run])[0]


def _recipe(run: str, vocab_size: int):
  """The experiment config of a run (`mini_runs`) at the corpus vocabulary's size."""
  params = exp_factory.get_exp_config(mini_runs()[run])
  params.task.model.encoder.vocab_size = vocab_size
  return params


def step_flops(vocab_size: int) -> dict[str, float]:
  """Run name (`mini_runs`) -> training FLOPs of one step of its experiment with `vocab_size`."""
  return {run: experiment_flops.step_flops(_recipe(run, vocab_size)) for run in mini_runs()}


def default_setup(corpus_dir: str, work_dir: str, out_dir: str, vocab_size: int,
                  bert_steps: int, validation_interval: int, seed: Optional[int] = None,
                  keep_checkpoints: bool = False) -> tuple[Setup, dict[str, float]]:
  """The benchmark's runs on the corpus: data built (`learning_data.prepare_data`) and budget.

  Every objective trains on the same records with the same budget, the FLOPs of `bert_steps`
  steps of `bert_mini` (whose data and trainer every mini objective shares), so that the learning
  benchmark and the GLUE replication (`replication.py`) run and reuse the same runs.

  Args:
    corpus_dir, work_dir, vocab_size: as for `learning_data.prepare_data`.
    out_dir: result files and the report.
    bert_steps: the budget in BERT-mini steps.
    validation_interval: steps between evaluations.
    seed: the runs' seed (`Setup.seed`).
    keep_checkpoints: keep every checkpoint of the runs (`Setup.keep_checkpoints`).

  Returns:
    (Setup, objective -> training FLOPs of one step).

  Raises:
    ValueError: `corpus_dir` lacks a file.
  """
  os.makedirs(work_dir, exist_ok=True)
  os.makedirs(out_dir, exist_ok=True)
  recipe = exp_factory.get_exp_config('bert_mini')
  vocab, train, valid = learning_data.prepare_data(corpus_dir, work_dir, vocab_size,
                                                   recipe.task.train_data.seq_length)
  vocab_size = tokenization.load_vocabulary(vocab).size
  flops = step_flops(vocab_size)
  setup = Setup(
      train_input=train, validation_input=valid, input_format='tfrecord', vocab_file=vocab,
      vocab_size=vocab_size, max_train_flops=float(bert_steps * flops['bert']),
      validation_interval=validation_interval, validation_steps=recipe.trainer.validation_steps,
      work_dir=work_dir, out_dir=out_dir, seed=seed, keep_checkpoints=keep_checkpoints)
  return setup, flops


def overrides(setup: Setup, objective: str) -> str:
  """The --params_override of `objective`'s run (an objective or a variant: `mini_runs`)."""
  fields = {
      'task.train_data.input_path': setup.train_input,
      'task.validation_data.input_path': setup.validation_input,
      'task.train_data.input_format': setup.input_format,
      'task.validation_data.input_format': setup.input_format,
      'task.train_data.vocab_file': setup.vocab_file,
      'task.validation_data.vocab_file': setup.vocab_file,
      'task.model.encoder.vocab_size': setup.vocab_size,
      'trainer.max_train_flops': setup.max_train_flops,
      'trainer.validation_interval': setup.validation_interval,
      'trainer.validation_steps': setup.validation_steps,
      **_past_the_recipe(objective, setup),
  }
  if setup.keep_checkpoints:
    fields['trainer.max_to_keep'] = _EVERY_CHECKPOINT
  return ','.join(f'{key}={value}' for key, value in fields.items())


def _past_the_recipe(objective: str, setup: Setup) -> dict:
  """Overrides that let a budget beyond the recipe's `train_steps` train to its end.

  `budgets.resolve` only shortens a run, so a compute-ladder rung (e.g. 3x the base budget)
  would stop at the recipe's `train_steps`. Such a run gets `train_steps` and the decay set to
  the budget's steps; setting the decay too keeps `schedules.follow_train_steps` from stretching
  the warmup, so every rung warms up as the base runs do and decays to 0 at its budget.
  """
  params = _recipe(objective, setup.vocab_size)
  steps = budgets.steps_in_budget(setup.max_train_flops, experiment_flops.step_flops(params))
  if steps <= params.trainer.train_steps:
    return {}
  rate = params.trainer.optimizer_config.learning_rate
  return {'trainer.train_steps': steps,
          f'trainer.optimizer_config.learning_rate.{rate.type}.decay_steps':
              steps - schedules.decay_config(params.trainer.optimizer_config).offset}


def budget_dir(work_dir: str, name: str, max_train_flops: float) -> str:
  """`<work_dir>/<name>_<budget>flops`: named by the pretraining budget, because every run and
  sweep resumes what it finds in its directory and another budget must not resume it."""
  return os.path.join(work_dir, f'{name}_{max_train_flops:.4g}flops')


def seeded(name: str, seed: Optional[int]) -> str:
  """`name`, or `<name>_seed<seed>` for a seeded run: the name of its directories."""
  return name if seed is None else f'{name}_seed{seed}'


def run_dir(setup: Setup, objective: str) -> str:
  """The run's model_dir (`budget_dir` of the run, `seeded`)."""
  return budget_dir(setup.work_dir, seeded(objective, setup.seed), setup.max_train_flops)


def final_run_dir(setup: Setup, objective: str, result: dict) -> str:
  """The run directory of `objective`, checked to hold the checkpoint its `result` ended at.

  A result file outlives its run directory: it is committed, the directory sits in `work_dir`
  (often /tmp). A run started again there, cut off or still training, leaves an earlier
  checkpoint under the finished run's name, and fine-tuning or probing it would report a
  half-trained encoder as that run's.

  Raises:
    ValueError: the directory's latest checkpoint is at another step than the result's last
      evaluation, or it holds none.
  """
  model_dir = run_dir(setup, objective)
  rows = result.get('curve') or []
  if not rows:
    return model_dir  # No evaluation to check against: a run stopped before its first one.
  final = rows[-1]['step']
  prefix = tf.train.latest_checkpoint(model_dir)
  step = None if prefix is None else checkpoints.global_step(prefix)
  if step != final:
    found = 'no checkpoint' if step is None else f'a checkpoint at step {step:,}'
    raise ValueError(
        f'{model_dir} holds {found}, but {result_path(setup, objective)} is a run that ended at '
        f'step {final:,}, whose checkpoint is gone. To pretrain {objective} again, move that '
        f'result file away and rerun tools/benchmark_learning.py (it resumes from the '
        f'directory\'s checkpoint, if any).')
  return model_dir


def train_command(objective: str, setup: Setup) -> list[str]:
  """The `teams_lab.train` command line of one run (an objective or a variant: `mini_runs`)."""
  return [sys.executable, '-m', 'teams_lab.train', f'--experiment={mini_runs()[objective]}',
          '--mode=train_and_eval', f'--model_dir={run_dir(setup, objective)}',
          f'--params_override={overrides(setup, objective)}'] + (
              [] if setup.seed is None else [f'--seed={setup.seed}'])


def curve(model_dir: str, flops_per_step: float) -> list[dict]:
  """The validation curve of a run: one dict per evaluation, with FLOPs and training seconds.

  Training seconds come from the wall times of the training summaries (`training_seconds`).
  """
  validation = run_summary.read_scalars(os.path.join(model_dir, 'validation'))
  train = run_summary.read_scalars(os.path.join(model_dir, 'train'))
  train_times = {step: row['wall_time'] for step, row in train.items()}
  resumed = run_summary.resumed_steps(os.path.join(model_dir, 'train'))
  rows = []
  for step in sorted(validation):
    row = {k: v for k, v in validation[step].items() if k != 'wall_time'}
    row.update(step=step, flops=step * flops_per_step,
               train_seconds=training_seconds(train_times, set(validation), step, resumed))
    rows.append(row)
  return rows


def training_seconds(train_times: dict[int, float], evaluation_steps: set[int],
                     step: int, resumed: Optional[set[int]] = None) -> Optional[float]:
  """Seconds of training up to `step`, from the wall times of the training summaries.

  An interval between two summaries that starts at an evaluation step also holds that
  evaluation and its checkpoint; one that ends at the first summary of a restart also holds the
  time the run was down. Such intervals are counted at the median seconds per step of the other
  intervals. Time before the first summary (start-up, tracing) is not counted.

  Args:
    train_times: training summary step -> wall time in seconds.
    evaluation_steps: the steps after which the run evaluated.
    step: count up to this step.
    resumed: the first summary step of each restart (`run_summary.resumed_steps`).

  Returns:
    Seconds, or None when fewer than two summaries reach `step`.
  """
  steps = [s for s in sorted(train_times) if s <= step]
  intervals = list(zip(steps, steps[1:]))
  if not intervals:
    return None
  resumed = resumed or set()
  is_clean = [a not in evaluation_steps and b not in resumed for a, b in intervals]
  clean = sorted((train_times[b] - train_times[a]) / (b - a)
                 for (a, b), ok in zip(intervals, is_clean) if ok)
  per_step = clean[len(clean) // 2] if clean else 0.0
  return sum(train_times[b] - train_times[a] if ok else per_step * (b - a)
             for (a, b), ok in zip(intervals, is_clean))


def verdicts(objective: str, last: dict) -> list[dict]:
  """Each target of `objective` against the run's last evaluation.

  A variant without one of its objective's tasks (`teams_no_mws`) reports none of that task's
  metrics, and is not held to its target.
  """
  rows = []
  for target in TARGETS[objective_of(objective)]:
    if target.metric not in last:
      continue
    value = last[target.metric]
    try:
      baseline = float(target.baseline)
    except ValueError:
      baseline = last.get(target.baseline)
    rows.append(dict(metric=target.metric, value=value, target=target.threshold,
                     baseline=baseline, met=value >= target.threshold))
  return rows


def result_path(setup: Setup, objective: str) -> str:
  return result_file(setup.out_dir, objective)


def result_file(out_dir: str, objective: str) -> str:
  """Where a run's result is written in `out_dir` (`learning_report` reads it there)."""
  return os.path.join(out_dir, f'{objective}.json')


def run_objective(objective: str, setup: Setup, flops_per_step: float,
                  log=print) -> Optional[dict]:
  """Trains (or resumes) one objective and writes its result file; returns the result.

  Skips a run whose result file exists. The training log goes to `<work_dir>/<objective>.log`.
  """
  path = result_path(setup, objective)
  if os.path.exists(path):
    with open(path) as f:
      result = json.load(f)
    written = result.get('setup') or {}
    if _comparable(written) != _comparable(dataclasses.asdict(setup)):
      raise ValueError(f'{path} was written for other settings ({result.get("setup")}); move it '
                       'away or choose another --out_dir to rerun.')
    log(f'{objective}: done ({path}); skipping')
    return result
  model_dir = run_dir(setup, objective)
  os.makedirs(setup.work_dir, exist_ok=True)
  command = train_command(objective, setup)
  budget_steps = budgets.steps_in_budget(setup.max_train_flops, flops_per_step)
  start = time.monotonic()
  reached = checkpoints.global_step(tf.train.latest_checkpoint(model_dir))
  if reached >= budget_steps:
    # Trained to its budget, but its result was never written (the run was stopped after its
    # last checkpoint, or the result's folder was gone): teams_lab.train would refuse to train
    # a model_dir with nothing left to do.
    log(f'{objective}: {model_dir} is already at step {reached:,} of {budget_steps:,}; '
        'writing its result without training')
  else:
    log(f'{objective}: training to {setup.max_train_flops:.3g} FLOPs '
        f'({budget_steps:,} steps); log in {model_dir}.log')
    with open(model_dir + '.log', 'a') as out:
      status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False,
                              env=child_processes.environment()).returncode
    if status:
      log(f'{objective}: teams_lab.train exited with {status}; see {model_dir}.log')
      return None
  rows = curve(model_dir, flops_per_step)
  result = dict(objective=objective, experiment=mini_runs()[objective], command=command,
                setup=dataclasses.asdict(setup),
                flops_per_step=flops_per_step, machine=hardware.description(), curve=rows,
                targets=verdicts(objective, rows[-1]) if rows else [],
                session_seconds=time.monotonic() - start)
  atomic_files.write_json(path, result)
  log(f'{objective}: ' + ', '.join(
      f'{v["metric"]} {v["value"]:.3f} (target {v["target"]}, baseline {v["baseline"]})'
      for v in result['targets'] if v['value'] is not None))
  return result
