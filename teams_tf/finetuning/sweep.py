"""A seed sweep of GLUE fine-tuning runs from one pretraining checkpoint.

Each (task, seed) is configured by `finetune_config.build_params` (the registered
`glue_<task>_<size>` experiment with the pretraining run's encoder; random-init runs can take
such a run's encoder, weights aside, from `encoder_from`) and run in this process by Model Garden's
`train_lib.run_experiment` (mode train_and_eval) in `<output_dir>/<task>/seed_<k>`, seeded with
`tf_keras.utils.set_random_seed(k)` and `task.train_data.seed=k`. Dev predictions from Model
Garden's `sentence_prediction.predict` are scored with `teams_tf.finetuning.glue_metrics` and
written to `<task>/seed_<k>/result.json`; a pair whose result.json exists is not run again
(resume), and an interrupted run resumes from its last checkpoint. Finally `sweep_report` writes
the tables over seeds, `results.md` and `results.json`, to `output_dir`. `tools/run_glue.py` is
the command line; `SweepSettings` holds its flags' values, `prepare` configures every run and
`run` trains them.
"""

import dataclasses
import math
import os
import time
from typing import Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from official.common import distribute_utils
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import hyperparams
from official.nlp.data import data_loader_factory
from official.nlp.tasks import sentence_prediction

from teams_tf.finetuning import finetune_config
from teams_tf.finetuning import glue_metrics
from teams_tf.finetuning import sweep_report
from teams_tf.registry import recipes
from teams_tf.training import run_summary


def parse_seeds(value):
  """'3' -> [1, 2, 3]; '1,5' -> [1, 5]; '7,' -> [7]."""
  parts = [part.strip() for part in value.split(',') if part.strip()]
  try:
    seeds = [int(part) for part in parts]
  except ValueError:
    raise ValueError(f'--seeds={value!r}: use N or a comma-separated list of integers.') from None
  if not seeds:
    raise ValueError(f'--seeds={value!r} names no seed.')
  if ',' not in value:
    if seeds[0] < 1:
      raise ValueError(f'--seeds={value!r}: N must be at least 1.')
    return list(range(1, seeds[0] + 1))
  if len(set(seeds)) != len(seeds):
    raise ValueError(f'--seeds={value!r} repeats a seed.')
  return seeds


def dev_labels(data_config):
  """[N] dev labels in example_id order, read with Model Garden's sentence-prediction loader."""
  config = data_config.replace(include_example_id=True, is_training=False)
  example_ids, labels = [], []
  for batch in data_loader_factory.get_data_loader(config).load().as_numpy_iterator():
    example_ids.append(batch['example_id'])
    labels.append(batch[config.label_field])
  example_ids, labels = np.concatenate(example_ids), np.concatenate(labels)
  return labels[np.argsort(example_ids, kind='stable')]


def _scalar_logs(logs):
  scalars = {}
  for key, value in (logs or {}).items():
    value = np.asarray(value)
    if value.size == 1 and np.issubdtype(value.dtype, np.number):
      scalars[key] = float(value)
  return scalars


def best_epoch(run_dir, metric):
  """(step, per-epoch rows) of the validation with the highest `metric` in `run_dir`.

  Reads the run's validation summaries (every epoch's, also across a resumed run); a NaN
  (a correlation of constant predictions) ranks last, and a tie goes to the earlier epoch.

  Raises:
    ValueError: no validation of the run logged `metric`.
  """
  rows = [dict(step=step, value=values[metric]) for step, values in
          sorted(run_summary.read_scalars(os.path.join(run_dir, 'validation')).items())
          if metric in values]
  if not rows:
    raise ValueError(f'{run_dir}/validation logged no {metric}: the run did not validate.')
  best = max(rows, key=lambda row: (not math.isnan(row['value']), row['value'], -row['step']))
  return best['step'], rows


def run_one(experiment, task, seed, run_dir, params, meta, steps_description, dev_data=None):
  """Fine-tunes and evaluates one (task, seed) in `run_dir`; returns the result dict.

  With `dev_data` (a run that validates on a held-out train slice: `finetune_config.build_params`'
  `select_epoch`), dev is predicted with the checkpoint of the epoch that scored best on the
  slice, and the result lists every epoch's slice score.
  """
  tf_keras.backend.clear_session()
  tf_keras.utils.set_random_seed(seed)
  strategy = distribute_utils.get_distribution_strategy(
      distribution_strategy=params.runtime.distribution_strategy,
      all_reduce_alg=params.runtime.all_reduce_alg,
      num_gpus=params.runtime.num_gpus,
      tpu_address=params.runtime.tpu)
  with strategy.scope():
    mg_task = task_factory.get_task(params.task, logging_dir=run_dir)
  train_utils.serialize_config(params, run_dir)
  checkpoint = tf.train.latest_checkpoint(run_dir)
  start_step = int(checkpoint.rsplit('-', 1)[1]) if checkpoint else 0
  if start_step:
    logging.info('%s seed %d: resuming from %s', task, seed, checkpoint)
  logging.info('%s seed %d: %s, init_checkpoint %r, model_dir %s', task, seed, steps_description,
               params.task.init_checkpoint, run_dir)
  eval_outputs = []
  start = time.time()
  model, _ = train_lib.run_experiment(
      distribution_strategy=strategy, task=mg_task, mode='train_and_eval', params=params,
      model_dir=run_dir, eval_actions=[eval_outputs.append])
  train_seconds = time.time() - start
  selection = None
  if dev_data is not None:
    metric = finetune_config.VALIDATION_METRICS[params.task.metric_type]
    step, epochs = best_epoch(run_dir, metric)
    tf.train.Checkpoint(model=model).read(os.path.join(run_dir, f'ckpt-{step}')).expect_partial()
    selection = dict(by='heldout', metric=metric, step=step, epochs=epochs,
                     heldout_examples=meta['heldout_data_size'])
  dev_data = dev_data or params.task.validation_data
  with strategy.scope():
    outputs = sentence_prediction.predict(mg_task, dev_data.replace(include_example_id=True),
                                          model)
  predictions = np.array([np.asarray(output).reshape(-1)[0] for output in outputs])
  labels = dev_labels(dev_data)
  metrics = glue_metrics.compute(task, predictions, labels)
  trained_steps = params.trainer.train_steps - start_step
  if task != 'stsb' and len(np.unique(predictions)) == 1:
    logging.warning('%s seed %d predicted class %s for every dev example: the classifier '
                    'collapsed to one class (try a lower learning rate or more epochs).',
                    task, seed, predictions[0])
  return {
      'task': task,
      'seed': seed,
      'experiment': experiment,
      'init_checkpoint': params.task.init_checkpoint,
      'metrics': metrics,
      # Distinct predicted classes on dev (None for STS-B's regression): 1 is a collapse.
      'predicted_classes': None if task == 'stsb' else int(len(np.unique(predictions))),
      'headline_metric': glue_metrics.headline_metric(task),
      # In example_id order, for intervals over dev examples.
      'dev_predictions': glue_metrics.encode_outputs(task, predictions),
      'dev_labels': glue_metrics.encode_outputs(task, labels),
      # The last validation's logs: of dev, or with `selection`, of the held-out slice.
      'model_garden_validation': _scalar_logs(eval_outputs[-1] if eval_outputs else None),
      'selection': selection,
      'dev_examples': int(len(labels)),
      'train_examples': meta['train_data_size'],
      'train_steps': params.trainer.train_steps,
      'steps_trained_in_this_run': trained_steps,
      'train_and_eval_seconds': round(train_seconds, 1),
      # Over the whole train_and_eval call: graph tracing, checkpoints and evaluation included.
      'overall_steps_per_second': (round(trained_steps / train_seconds, 2) if trained_steps
                                   else None),
      'total_seconds': round(time.time() - start, 1),
      'model_dir': run_dir,
  }


@dataclasses.dataclass(frozen=True)
class SweepSettings:
  """What a sweep runs: the values of `tools/run_glue.py`'s flags.

  Attributes:
    tasks: GLUE task names (keys of `glue_metrics.TASK_METRICS`) in table order.
    seeds: 'N' (seeds 1..N) or a comma-separated list of seeds ('k,' for the one seed k).
    size: encoder size ('demo', 'mini', 'small', 'base', 'large'); runs `glue_<task>_<size>`.
    data_dir: folder with one `<task>/` of `tools/create_glue_data.py` outputs per task.
    init_checkpoint: pretraining model_dir or checkpoint prefix ('' = random init).
    output_dir: folder of the runs (`<task>/seed_<k>`, each with its result.json) and tables.
    train_steps: train steps per run, or None to derive them from `epochs`.
    epochs: epochs per run, or None for the experiment's (Table 6: 5).
    params_override: Model Garden override (YAML/JSON string or k=v,...) for every run.
    encoder_from: with `init_checkpoint` '', a `teams_tf.train` run directory whose kept
      encoder's architecture (not its weights) the runs build, so that a random-init baseline
      has the pretrained encoders' shape (no flag: set by `tools/replicate.py`).
    select_epoch: validate on each task's held-out train slice every epoch and score dev at
      the best one (`finetune_config.build_params`), never choosing on dev.
  """
  tasks: Sequence[str]
  seeds: str
  size: str
  data_dir: str
  init_checkpoint: str
  output_dir: str
  train_steps: Optional[int] = None
  epochs: Optional[float] = None
  params_override: Optional[str] = None
  encoder_from: Optional[str] = None
  select_epoch: bool = False


@dataclasses.dataclass(frozen=True)
class SweepPlan:
  """Every run of a sweep, configured before any training starts.

  Attributes:
    tasks: task names in table order.
    seeds: seeds in run order.
    configs: {(task, seed): `finetune_config.build_params`' (params, meta, steps description)}.
    relative_positions: whether the runs are the `*_rel_pos` experiments.
  """
  tasks: list[str]
  seeds: list[int]
  configs: dict[tuple[str, int], tuple[hyperparams.Config, dict, str]]
  relative_positions: bool


def prepare(settings):
  """Checks the settings and builds every run's config, so mistakes fail before any training.

  Returns:
    The `SweepPlan`. Raises ValueError (naming the flag or file) for bad settings or data.
  """
  tasks = list(settings.tasks)
  unknown = [task for task in tasks if task not in glue_metrics.TASK_METRICS]
  if unknown:
    raise ValueError(f'Unknown --tasks {unknown}; use {", ".join(glue_metrics.TASK_METRICS)}.')
  if len(set(tasks)) != len(tasks):
    raise ValueError(f'--tasks={",".join(tasks)} repeats a task.')
  seeds = parse_seeds(settings.seeds)
  relative_positions = finetune_config.check_init_checkpoint(settings.init_checkpoint)
  encoder = finetune_config.pretraining_encoder(settings.init_checkpoint)
  if settings.encoder_from:
    if settings.init_checkpoint:
      raise ValueError(f'encoder_from={settings.encoder_from} is for random-init runs, but '
                       f'init_checkpoint={settings.init_checkpoint}; give only one of them.')
    # The architecture alone: init_checkpoint stays '', so the weights are random.
    encoder = finetune_config.pretraining_encoder(settings.encoder_from)
    if encoder is None:
      raise ValueError(f'encoder_from={settings.encoder_from} has no params.yaml beside its '
                       'checkpoint; pass the model_dir of a teams_tf.train run.')
  if encoder is not None or settings.size in recipes.LOW_BUDGET_SIZES:
    # The encoder is the run's (demo, mini: one kind each), not a suffix's.
    relative_positions = False
  configs = {}
  for task in tasks:
    for seed in seeds:
      configs[(task, seed)] = finetune_config.build_params(
          task, settings.size, seed, settings.data_dir, settings.init_checkpoint,
          settings.train_steps, settings.epochs, settings.params_override, relative_positions,
          encoder, settings.select_epoch)
  return SweepPlan(tasks, seeds, configs, relative_positions)


def run(settings, plan):
  """Runs every (task, seed) of `plan` without a result.json, then writes the tables.

  Args:
    settings: the sweep's `SweepSettings`.
    plan: `prepare(settings)`.

  Returns:
    The Markdown table of all runs' results, written with `results.json` to `output_dir` by
    `sweep_report.write_tables`.
  """
  run_dirs = {pair: os.path.join(settings.output_dir, pair[0], f'seed_{pair[1]}')
              for pair in plan.configs}
  to_run = []
  for pair, run_dir in run_dirs.items():
    if tf.io.gfile.exists(os.path.join(run_dir, 'result.json')):
      logging.info('%s seed %d: skipped, %s/result.json exists', *pair, run_dir)
    else:
      to_run.append(pair)
  logging.info('%d run(s) to do, %d already done: %s', len(to_run),
               len(plan.configs) - len(to_run),
               ' '.join(f'{task}/seed_{seed}' for task, seed in to_run))

  start = time.time()
  for index, (task, seed) in enumerate(to_run):
    params, meta, steps_description = plan.configs[(task, seed)]
    logging.info('=== run %d/%d: %s seed %d ===', index + 1, len(to_run), task, seed)
    dev_data = (params.task.validation_data.replace(
        input_path=os.path.join(settings.data_dir, task, 'dev.tfrecord'))
                if settings.select_epoch else None)
    result = run_one(finetune_config.experiment_name(task, settings.size, plan.relative_positions),
                     task, seed, run_dirs[(task, seed)], params, meta, steps_description,
                     dev_data)
    sweep_report.write_json(os.path.join(run_dirs[(task, seed)], 'result.json'), result)
    elapsed = time.time() - start
    remaining = len(to_run) - index - 1
    headline = result['headline_metric']
    logging.info('=== done %d/%d: %s seed %d: dev %s %.4f; %.0f s (%s steps/s overall); '
                 'elapsed %.0f s, ETA %.0f s for %d more run(s) ===', index + 1, len(to_run),
                 task, seed, headline, result['metrics'][headline], result['total_seconds'],
                 result['overall_steps_per_second'], elapsed,
                 elapsed / (index + 1) * remaining, remaining)

  results = [sweep_report.read_json(os.path.join(run_dir, 'result.json'))
             for run_dir in run_dirs.values()]
  return sweep_report.write_tables(results, settings.output_dir, plan.tasks, plan.seeds,
                                   settings.size, settings.init_checkpoint)


def run_fields(fields: dict) -> str:
  """`prepare` and `run` the sweep of `SweepSettings(**fields)`: the `fine_tune` of the
  replication and of fine-tuning along a run (`teams_lab.replication.sweep_settings`).

  Returns:
    `run`'s table. Raises ValueError as `prepare` does.
  """
  settings = SweepSettings(**fields)
  return run(settings, prepare(settings))
