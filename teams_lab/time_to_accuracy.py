"""Time to accuracy: teams_tf against Hugging Face and Model Garden, same corpus, shape and cores.

Each implementation (`IMPLEMENTATIONS`) pretrains its recipe (`bert_mini`, or `teams_mini` for the
TEAMS pair: its shape, batch, T, masking, AdamW and schedule, wherever the implementation can set
them) from the same records of the shared Wikipedia extract, alone on the machine, to the setup's
`train_steps`, keeping a checkpoint every `checkpoint_interval` steps. When it is done, every
checkpoint is scored on one held-out evaluation set (`time_to_accuracy_data`: wiki_49 masked once
at 15%; a TEAMS run also by its RTD AUC, `time_to_accuracy_scores`), and placed at the minutes its
checkpoint was written, counted from the command's launch: start-up, tracing and checkpoint
writing count, as a user waits for them; nothing else runs meanwhile.
A launch that resumes an interrupted run adds its time to that of the checkpoint it resumed
from. A run is one unit: `<out_dir>/<machine>/<implementation>.json` is written when it is
scored, and rerunning on that machine skips it, so the table fills in across sessions. Runs,
results and ratios are kept per machine (`hardware.description`, whose CPU signature tells
apart generations that share a model name): minutes taken on two CPUs are not compared.
"""

import dataclasses
import json
import os
import subprocess
import sys
import time
from typing import Optional

from official.core import exp_factory
from official.modeling import hyperparams

from teams_lab import child_processes
from teams_lab import model_garden_mlm
from teams_lab import model_garden_teams
from teams_lab import time_to_accuracy_data
from teams_lab import time_to_accuracy_scores
from teams_tf.training import experiment_flops
from teams_tf.utils import atomic_files
from teams_tf.utils import hardware


@dataclasses.dataclass(frozen=True)
class Implementation:
  """One way to pretrain the recipe.

  Attributes:
    framework: 'teams_tf', 'model_garden', 'model_garden_teams' or 'hugging_face' (how it
      trains, saves and is read).
    description: the row's label in the report.
    overrides: teams_tf only: `--params_override` fields beyond the data's.
    unmatched: what it cannot set as the recipe does.
    experiment: the teams_tf recipe it follows.
  """
  framework: str
  description: str
  overrides: tuple[str, ...] = ()
  unmatched: tuple[str, ...] = ()
  experiment: str = 'bert_mini'


# The MLM recipe every implementation of the main comparison follows, and the TEAMS pair's.
EXPERIMENT = 'bert_mini'
TEAMS_EXPERIMENT = 'teams_mini'


IMPLEMENTATIONS = {
    'teams_tf': Implementation('teams_tf', 'teams_tf (`teams_tf.train`)'),
    # The peers have no relative position bias: this row tells the recipe's share of a gap from
    # the code's.
    'teams_tf_absolute': Implementation(
        'teams_tf', 'teams_tf, absolute positions only (as the peers)',
        overrides=('task.model.relative_position_bias=false',),
        unmatched=('absolute positions only (the recipe adds a T5 relative position bias)',)),
    'model_garden': Implementation(
        'model_garden', 'Model Garden (`official.nlp.train`, bert/pretraining)',
        unmatched=model_garden_mlm.UNMATCHED),
    'hugging_face': Implementation(
        'hugging_face', 'Hugging Face (`BertForMaskedLM`, `transformers.Trainer`, PyTorch)',
        # Here, not in hugging_face_mlm, whose import would load torch.
        unmatched=(
            'post-LN blocks (BertForMaskedLM has no pre-LN option; the recipe is pre-LN)',
            'absolute positions only (no T5 relative position bias; BertConfig\'s '
            '"relative_key" is another scheme)',
            'each token masked with probability mask_rate (DataCollatorForLanguageModeling), '
            'not exactly round(n x rate) tokens capped at P',
            'MLM logits over all T positions, not only the masked ones',
            'the learning rate decays from the end of warmup, not from step 0')),
    # The TEAMS pair: generator MLM accuracy and RTD AUC against minutes.
    'teams_tf_teams': Implementation('teams_tf', 'teams_tf TEAMS (`teams_tf.train`, teams_mini)',
                                     experiment=TEAMS_EXPERIMENT),
    'model_garden_teams': Implementation(
        'model_garden_teams', "Model Garden's TEAMS (`official/projects/teams`)",
        unmatched=model_garden_teams.UNMATCHED, experiment=TEAMS_EXPERIMENT),
}


@dataclasses.dataclass
class Setup:
  """What every run shares.

  Attributes:
    train_input: the unmasked training records (`learning_data.prepare_data`).
    validation_input: the held-out unmasked records.
    vocab_file: their vocabulary.
    vocab_size: its size.
    work_dir: data and run directories.
    out_dir: result files and the report.
    train_steps: steps of every run (the recipe's by default); the schedule decays over them.
    checkpoint_interval: steps between the checkpoints that are scored.
    seed: the runs' seed (weights, sampling, data order) where the implementation takes one.
    batch_size: the recipe's when None (tests set a smaller one).
    machine: the machine the runs train on (`hardware.description()`), which keys their run
      directories and result files.
  """
  train_input: str
  validation_input: str
  vocab_file: str
  vocab_size: int
  work_dir: str
  out_dir: str
  train_steps: int = 10_000
  checkpoint_interval: int = 500
  seed: int = 1
  batch_size: Optional[int] = None
  machine: str = dataclasses.field(default_factory=hardware.description)


@dataclasses.dataclass
class Settings:
  """One run, as its training process reads it from `<run_dir>/settings.json`.

  Attributes:
    implementation: a key of `IMPLEMENTATIONS`.
    model_dir: where it writes checkpoints and summaries.
    train_input: its training input (records, masked records or token arrays).
    evaluation_set: the `.npz` of `time_to_accuracy_data.evaluation_set`.
    encoder: the recipe's Model Garden `BertEncoderConfig`, as a dict.
    model: the recipe's whole `task.model`, as a dict, where it is not `EXPERIMENT` (None there,
      where `encoder` says everything).
    optimizer: the recipe's AdamW and schedule: learning_rate (peak), warmup_steps,
      weight_decay, beta_1, beta_2, epsilon, clip_norm (global norm).
    optimizer_config: the same as Model Garden's `OptimizationConfig` dict.
    Others: the recipe's (`mask_rate` etc. of its training data) and `Setup`'s.
  """
  implementation: str
  model_dir: str
  train_input: str
  evaluation_set: str
  vocab_file: str
  encoder: dict
  optimizer: dict
  optimizer_config: dict
  train_steps: int
  checkpoint_interval: int
  summary_interval: int
  batch_size: int
  seq_length: int
  max_predictions: int
  mask_rate: float
  mask_token_rate: float
  random_token_rate: float
  seed: int
  model: Optional[dict] = None


def recipe(setup: Setup, experiment: str = EXPERIMENT):
  """The ExperimentConfig of recipe `experiment` at the setup's vocabulary, steps and batch."""
  params = exp_factory.get_exp_config(experiment)
  params.task.model.encoder.vocab_size = setup.vocab_size
  params.trainer.train_steps = setup.train_steps
  params.trainer.optimizer_config.learning_rate.polynomial.decay_steps = setup.train_steps
  if setup.batch_size:
    params.task.train_data.global_batch_size = setup.batch_size
  return params


def seq_length() -> int:
  """T of the recipe, which the records must have."""
  return exp_factory.get_exp_config(EXPERIMENT).task.train_data.seq_length


def run_dir(setup: Setup, name: str) -> str:
  """`<work_dir>/time_to_accuracy/<machine>/<name>_seed<seed>`: settings, launches, log, model/.

  Per machine: a run resumed on another CPU would mix the two's minutes.
  """
  return os.path.join(setup.work_dir, 'time_to_accuracy', hardware.machine_key(setup.machine),
                      f'{name}_seed{setup.seed}')


def settings(setup: Setup, name: str) -> Settings:
  """The run of implementation `name`; `write_inputs` writes the files it names."""
  experiment = IMPLEMENTATIONS[name].experiment
  params = recipe(setup, experiment)
  data = params.task.train_data
  framework = IMPLEMENTATIONS[name].framework
  if framework in MASKED_RECORD_FRAMEWORKS:
    train_input = time_to_accuracy_data.masked_epochs_pattern(_masked_records_dir(setup))
  elif framework == 'hugging_face':
    train_input = os.path.join(setup.work_dir, f'token_arrays_{setup.vocab_size}.npz')
  else:
    train_input = setup.train_input
  evaluation_set = os.path.join(setup.work_dir, f'evaluation_set_{setup.vocab_size}.npz')
  optimization = params.trainer.optimizer_config
  adamw = optimization.optimizer.adamw
  return Settings(
      implementation=name, model_dir=os.path.join(run_dir(setup, name), 'model'),
      train_input=train_input, evaluation_set=evaluation_set, vocab_file=setup.vocab_file,
      encoder=params.task.model.encoder.as_dict(),
      optimizer=dict(learning_rate=optimization.learning_rate.polynomial.initial_learning_rate,
                     warmup_steps=optimization.warmup.linear.warmup_steps,
                     weight_decay=adamw.weight_decay_rate, beta_1=adamw.beta_1,
                     beta_2=adamw.beta_2, epsilon=adamw.epsilon,
                     clip_norm=adamw.gradient_clip_norm),
      optimizer_config=optimization.as_dict(), train_steps=setup.train_steps,
      checkpoint_interval=setup.checkpoint_interval,
      # Checkpoints are written at the end of a loop of summary_interval steps.
      summary_interval=min(params.trainer.summary_interval, setup.checkpoint_interval),
      batch_size=data.global_batch_size,
      seq_length=data.seq_length, max_predictions=data.max_predictions_per_seq,
      mask_rate=data.mask_rate, mask_token_rate=data.mask_token_rate,
      random_token_rate=data.random_token_rate, seed=setup.seed,
      model=None if experiment == EXPERIMENT else params.task.model.as_dict())


# Model Garden's loaders read statically masked records.
MASKED_RECORD_FRAMEWORKS = ('model_garden', 'model_garden_teams')


def _masked_records_dir(setup: Setup) -> str:
  return os.path.join(setup.work_dir, f'masked_records_{setup.vocab_size}')


def write_inputs(setup: Setup, run: Settings) -> None:
  """Writes the training input and evaluation set `run` names, where missing (minutes, once).

  Both recipes mask their data alike (`bert_mini` and `teams_mini` share the learning benchmark's
  data settings), so the two pairs share the masked records and the evaluation set.
  """
  params = recipe(setup)
  data = params.task.train_data
  framework = IMPLEMENTATIONS[run.implementation].framework
  if framework in MASKED_RECORD_FRAMEWORKS:
    sequences = _sequences(setup.train_input)
    time_to_accuracy_data.masked_epochs(
        data, setup.train_input, setup.vocab_file, sequences,
        time_to_accuracy_data.epochs_needed(run.train_steps, run.batch_size, sequences),
        _masked_records_dir(setup))
  elif framework == 'hugging_face':
    time_to_accuracy_data.token_arrays(setup.train_input, run.seq_length, run.train_input)
  time_to_accuracy_data.evaluation_set(params.task.validation_data, setup.validation_input,
                                       setup.vocab_file, run.evaluation_set)


def _sequences(records: str) -> int:
  """How many sequences the records hold, from their summary."""
  with open(os.path.join(os.path.dirname(records), 'pretrain-summary.json')) as f:
    return json.load(f)['records']


def teams_tf_overrides(setup: Setup, run: Settings) -> str:
  """The `--params_override` of a teams_tf run: its data, steps, checkpoints and variant."""
  fields = [
      f'task.train_data.input_path={setup.train_input}',
      f'task.validation_data.input_path={setup.validation_input}',
      'task.train_data.input_format=tfrecord', 'task.validation_data.input_format=tfrecord',
      f'task.train_data.vocab_file={setup.vocab_file}',
      f'task.validation_data.vocab_file={setup.vocab_file}',
      f'task.train_data.global_batch_size={run.batch_size}',
      f'task.model.encoder.vocab_size={setup.vocab_size}',
      f'trainer.train_steps={run.train_steps}',
      f'trainer.checkpoint_interval={run.checkpoint_interval}',
      f'trainer.steps_per_loop={run.summary_interval}',
      f'trainer.summary_interval={run.summary_interval}',
      f'trainer.max_to_keep={model_garden_mlm.KEEP_EVERY_CHECKPOINT}',
      *IMPLEMENTATIONS[run.implementation].overrides]
  return ','.join(fields)


def train_command(setup: Setup, run: Settings) -> list[str]:
  """The command line that trains `run` (written beside it as `settings.json`)."""
  implementation = IMPLEMENTATIONS[run.implementation]
  framework = implementation.framework
  if framework == 'teams_tf':
    return [sys.executable, '-m', 'teams_tf.train', f'--experiment={implementation.experiment}',
            '--mode=train',
            f'--model_dir={run.model_dir}', f'--params_override={teams_tf_overrides(setup, run)}',
            f'--seed={run.seed}']
  directory = os.path.dirname(run.model_dir)
  if framework == 'model_garden':
    return [sys.executable, '-m', 'official.nlp.train',
            f'--experiment={model_garden_mlm.EXPERIMENT}', '--mode=train',
            f'--model_dir={run.model_dir}',
            f'--config_file={os.path.join(directory, "model_garden.yaml")}']
  if framework == 'model_garden_teams':
    return [sys.executable, '-m', 'teams_lab.model_garden_teams',
            f'--experiment={model_garden_teams.EXPERIMENT}', '--mode=train',
            f'--model_dir={run.model_dir}',
            f'--config_file={os.path.join(directory, "model_garden.yaml")}']
  return [sys.executable, '-m', 'teams_lab.hugging_face_mlm', 'train', directory]


def _checkpoints(run: Settings) -> dict[int, tuple[str, float]]:
  return time_to_accuracy_scores.checkpoints(IMPLEMENTATIONS[run.implementation].framework,
                                             run.model_dir)


def elapsed_seconds(written: dict[int, float], launches: list[dict]) -> dict[int, float]:
  """Seconds of the run's launches up to each checkpoint.

  A checkpoint belongs to the last launch started before it was written; its seconds are the
  time since that launch started plus the seconds of the checkpoint the launch resumed from
  (none for a fresh one). Steps an interrupted launch trained past its last checkpoint are
  trained again, and the time they took is not counted.

  Args:
    written: step -> wall time the checkpoint was written.
    launches: `{'started': wall time, 'resumed_step': step}` of every launch, in order.

  Returns:
    step -> seconds, for every checkpoint written during a launch.
  """
  seconds = {}
  for step in sorted(written):
    started = [launch for launch in launches if launch['started'] <= written[step]]
    if not started:
      continue
    launch = started[-1]
    resumed = launch['resumed_step']
    base = seconds.get(resumed, 0.0) if resumed else 0.0
    seconds[step] = base + written[step] - launch['started']
  return seconds


def _read_json(path, default):
  if not os.path.exists(path):
    return default
  with open(path) as f:
    return json.load(f)


def train(setup: Setup, run: Settings, log=print) -> bool:
  """Trains (or resumes) `run` to its steps, logging each launch; True if it got there."""
  directory = os.path.dirname(run.model_dir)
  os.makedirs(directory, exist_ok=True)
  atomic_files.write_json(os.path.join(directory, 'settings.json'), dataclasses.asdict(run))
  framework = IMPLEMENTATIONS[run.implementation].framework
  if framework in MASKED_RECORD_FRAMEWORKS:
    peer = model_garden_mlm if framework == 'model_garden' else model_garden_teams
    hyperparams.save_params_dict_to_yaml(peer.params(run),
                                         os.path.join(directory, 'model_garden.yaml'))
  reached = max(_checkpoints(run), default=0)
  if reached >= run.train_steps:
    return True
  launches_path = os.path.join(directory, 'launches.json')
  launches = _read_json(launches_path, [])
  command = train_command(setup, run)
  log(f'{run.implementation}: training to step {run.train_steps:,}'
      + (f' from step {reached:,}' if reached else '') + f'; log in {directory}/train.log')
  launches.append(dict(started=time.time(), resumed_step=reached, command=command))
  atomic_files.write_json(launches_path, launches)
  with open(os.path.join(directory, 'train.log'), 'a') as out:
    status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False,
                            env=child_processes.environment()).returncode
  if status:
    log(f'{run.implementation}: training exited with {status}; see {directory}/train.log')
  return not status and max(_checkpoints(run), default=0) >= run.train_steps


def result_file(out_dir: str, name: str, machine: str) -> str:
  """`<out_dir>/<machine key>/<name>.json`: the result of implementation `name` on `machine`."""
  return os.path.join(out_dir, hardware.machine_key(machine), f'{name}.json')


def _comparable(run: dict) -> dict:
  """A run's settings without where its files are, which say nothing about the run.

  A field left None is left out, as in result files written before it existed.
  """
  return {key: value for key, value in run.items()
          if key not in ('model_dir', 'train_input', 'evaluation_set', 'vocab_file')
          and value is not None}


def run_implementation(setup: Setup, name: str, log=print) -> Optional[dict]:
  """Trains, scores and writes the result of one implementation; skips a finished one.

  Returns:
    The result (`curve`: step, seconds, minutes, flops, mlm_accuracy per checkpoint), or None
    when training stopped short of its steps.

  Raises:
    ValueError: an unknown implementation, or a result file written for other settings.
  """
  if name not in IMPLEMENTATIONS:
    raise ValueError(f'Unknown implementation {name!r}; use some of {", ".join(IMPLEMENTATIONS)}.')
  path = result_file(setup.out_dir, name, setup.machine)
  run = settings(setup, name)
  if os.path.exists(path):
    written = _read_json(path, {}).get('settings', {})
    if _comparable(written) != _comparable(dataclasses.asdict(run)):
      raise ValueError(f'{path} was written for other settings; move it away or choose another '
                       '--out_dir to rerun.')
    log(f'{name}: done ({path}); skipping')
    return _read_json(path, None)
  write_inputs(setup, run)
  if not train(setup, run, log):
    return None
  scores = time_to_accuracy_scores.evaluate(IMPLEMENTATIONS[name].framework, run, log)
  directory = os.path.dirname(run.model_dir)
  launches = _read_json(os.path.join(directory, 'launches.json'), [])
  seconds = elapsed_seconds({step: when for step, (_, when) in _checkpoints(run).items()},
                            launches)
  implementation = IMPLEMENTATIONS[name]
  flops_per_step = experiment_flops.step_flops(recipe(setup, implementation.experiment))
  result = dict(
      implementation=name, description=implementation.description,
      unmatched=list(implementation.unmatched), commands=[launch['command'] for launch in launches],
      settings=dataclasses.asdict(run), machine=setup.machine,
      flops_per_step=flops_per_step,
      curve=[dict(step=step, seconds=seconds.get(step), flops=step * flops_per_step,
                  minutes=None if seconds.get(step) is None else seconds[step] / 60,
                  **scores[step]) for step in sorted(scores)])
  os.makedirs(os.path.dirname(path), exist_ok=True)
  atomic_files.write_json(path, result)
  return result
