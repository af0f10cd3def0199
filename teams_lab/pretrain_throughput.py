"""Pretraining step throughput of every objective vs Model Garden's and Hugging Face's, in one run.

`tools/benchmark_pretrain.py` runs it. For each objective (TEAMS, ELECTRA, ELECTRA with TEAMS's
generator, BERT, COCO-LM, TACO, SCRIPT), size ('tiny': the `<objective>_demo` model, post-LN with
absolute positions; 'small': `<objective>_small`, the paper's small) and setting (float32 or mixed
bfloat16, each with and without XLA = `jit_compile=True` on the step), times one full training step:
Model Garden's `task.train_step` (forward, every loss, backward, the experiment's AdamW update from
`train_utils.create_optimizer`, metric updates) inside `tf.function`, on one fixed real batch of the
sample corpus from the task's input pipeline (T=--seq_length, B=--batch_size, P=--max_predictions;
the same batch for every variant), `--warmup` untimed steps (tracing, XLA compilation), then the
median of `--steps` timed ones. Every variant runs in its own process (`pretrain_variants.py`), so
its peak RSS (`ru_maxrss`) is its own. The small size uses the paper's vocabulary size
(`--vocab_size`, BERT's 30,522) instead of the sample's 3,660.

In the same run: this machine's float32 and bfloat16 matmul peak (median of `--peak_repeats`
products of two `--peak_matmul_size` square matrices, before and after the variants), each step's
FLOPs counted analytically (`teams_tf.training.flops.FORMULA`, printed in the results), and as
anchors (`--implementations`): 'official', Model Garden's TEAMS (`official.projects.teams`) and
ELECTRA (`official/nlp/tasks/electra_task.py`, `ElectraPretrainer`) at the configuration of ours,
fed our batch and run with our optimizer; 'official_patched', the same with the logits cast to
float32 where they enter its samplers and losses (bfloat16 settings only; unpatched it fails to
build under mixed_bfloat16); 'hf', Hugging Face's PyTorch ELECTRA modules in the same ELECTRA step,
when `torch` and `transformers` import (else reported as skipped). End to end ('train', TEAMS and
ELECTRA at `--train_settings`, by default the setting their experiment runs): `python -m
teams_tf.train` itself at the same shapes on the sample corpus as text, `--train_loops` loops of
`--steps` steps, its steady-state steps/s (loops after the first, from Orbit's summaries) over the
fixed-batch step's at the same setting (`train_loop_throughput.py`).

Model Garden TEAMS at our `teams_<size>` (`TeamsConfig` -> `TeamsPretrainerConfig`), small:
  encoder (L=12, H=256, E=128, I=1024, 4 heads, V)  -> discriminator, the same BertEncoderConfig
  num_generator_layers None = L/2 = 6, width 1      -> generator = that config with num_layers=6
  num_shared_layers None = 6/2 = 3                  -> num_shared_generator_hidden_layers=3
  rtd_head_input_layer None = L-1 = 11              -> num_discriminator_task_agnostic_layers=11
                                                       (its RTD head: L-11 = 1 transformer layer)
  num_negatives K = 5                               -> candidate_size = K+1 = 6
  λ1 = 5, λ2 = 2, MLM weight 1                      -> discriminator_rtd/mws_loss_weight 5, 2; 1
  tied embeddings                                   -> tie_embeddings=True
Model Garden ELECTRA at our `electra_<size>` (`ElectraPretrainerConfig`), small:
  encoder                                           -> discriminator_encoder (type bert)
  generator: width 1/4 (H=64, I=256, 1 head), E=128, 12 layers -> generator_encoder (type bert)
  rtd_loss_weight λ = 50                            -> discriminator_loss_weight=50
  tied embeddings; no next-sentence task            -> tie_embeddings=True; cls_heads=[]
What cannot be matched exactly is listed in every results file
(`pretrain_report.MODEL_GARDEN_DIFFERENCES`). Results go to
`<output_dir>/pretrain_throughput.md` and `.json`.
"""

import dataclasses
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Sequence

from teams_lab import child_processes
from teams_lab import pretrain_report
from teams_lab import pretrain_variants as variants
from teams_tf.training import precision
from teams_tf.utils import hardware

IMPLEMENTATIONS = ('ours', 'official', 'official_patched', 'hf', 'train')


@dataclasses.dataclass
class Settings:
  """What one benchmark run measures; `tools/benchmark_pretrain.py`'s flags of the same names."""
  objectives: Sequence[str] = tuple(variants.OBJECTIVES)
  sizes: Sequence[str] = ('tiny', 'small')  # The issue-9 table; 'mini' on request.
  settings: Sequence[str] = tuple(variants.SETTINGS)
  implementations: Sequence[str] = IMPLEMENTATIONS
  anchor_settings: Sequence[str] = ('fp32', 'bf16')
  train_settings: Sequence[str] = ('default',)
  steps: int = 10
  warmup: int = 3
  train_loops: int = 4
  seq_length: int = 128
  batch_size: int = 32
  max_predictions: int = 20
  vocab_size: int = 30522
  peak_matmul_size: int = 4096
  peak_repeats: int = 10
  remeasure_peak: bool = True
  variant_timeout: int = 3600
  output_dir: str = 'benchmarks'
  output_name: str = 'pretrain_throughput'


def _log(message):
  print(message, file=sys.stderr, flush=True)


def check(settings):
  """Raises ValueError naming the first unknown or out-of-range setting."""
  for name, known in (('objectives', variants.OBJECTIVES), ('sizes', variants.SIZES),
                      ('settings', variants.SETTINGS), ('anchor_settings', variants.SETTINGS),
                      ('train_settings', ('default', *variants.SETTINGS)),
                      ('implementations', IMPLEMENTATIONS)):
    unknown = [value for value in getattr(settings, name) if value not in known]
    if unknown:
      raise ValueError(f'--{name}: unknown {unknown}; use some of {list(known)}.')
  for implementation in settings.implementations:
    for size in settings.sizes:
      variants.check_size(implementation, size)
  if settings.steps < 1 or settings.warmup < 1:
    raise ValueError('--steps and --warmup must be >= 1 (the first step traces and compiles; it '
                     'is never timed).')
  if settings.train_loops < 2:
    raise ValueError('--train_loops must be >= 2 (the first loop traces and compiles; the '
                     'steady state is the loops after it).')


def git_commit() -> str:
  """The clone's short commit, marked '+uncommitted changes' when tracked files differ from it."""
  clone = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=clone,
                          capture_output=True, text=True, check=False).stdout.strip()
  dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=clone,
                         capture_output=True, text=True, check=False).stdout.strip()
  return commit + ('+uncommitted changes' if dirty else '')


def _machine():
  """CPU model, cores, memory, bfloat16 support and software versions."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  memory_gib = None
  if os.path.exists('/proc/meminfo'):
    with open('/proc/meminfo') as f:
      memory_gib = round(int(f.readline().split()[1]) / 2**20, 1)
  versions = {}
  for package in ('tf-models-official', 'torch', 'transformers'):
    try:
      versions[package] = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
      versions[package] = None
  return dict(cpu=hardware.cpu_model(), signature=hardware.cpu_signature(), cpus=os.cpu_count(),
              avx512_bf16='avx512_bf16' in hardware.cpuinfo().get('flags', '').split(),
              memory_gib=memory_gib, platform=platform.platform(),
              python=platform.python_version(), tensorflow=tf.__version__,
              git_commit=git_commit(), **versions)


def _matmul_peak(n, repeats):
  """GFLOP/s of an n x n x n matmul in float32 and bfloat16 (median of `repeats`)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  peaks = {}
  for dtype in (tf.float32, tf.bfloat16):
    a = tf.cast(tf.random.stateless_normal([n, n], seed=[1, 2]), dtype)
    b = tf.cast(tf.random.stateless_normal([n, n], seed=[3, 4]), dtype)

    @tf.function
    def product(x, y):
      # Reading one element synchronises without copying the n x n product out.
      return tf.cast(tf.matmul(x, y)[0, 0], tf.float32)

    for _ in range(2):
      product(a, b).numpy()
    times = []
    for _ in range(repeats):
      start = time.perf_counter()
      product(a, b).numpy()
      times.append(time.perf_counter() - start)
    peaks[dtype.name] = 2 * n**3 / statistics.median(times) / 1e9
  return peaks


def _default_settings(settings, cpu_flags):
  """Per size, the setting `teams_tf.train` runs the experiment at on a CPU with `cpu_flags`.

  The experiment's precision, unless this CPU makes it slower (`training/precision.choose`: the
  paper sizes' bfloat16 becomes float32 without native bfloat16), so that the "default settings"
  ratios compare what a user of this machine gets.
  """
  defaults = {}
  for size in settings.sizes:
    configured = variants.experiment_params(
        'teams', size, settings.seq_length, settings.batch_size, settings.max_predictions,
        0).runtime.mixed_precision_dtype
    dtype, _ = precision.choose(
        configured, set_by_user=False,
        has_accelerator=precision.has_accelerator(), cpu_flags=cpu_flags)
    defaults[size] = 'bf16' if dtype == 'bfloat16' else 'fp32'
  return defaults


def _plan(settings, hf_available, default_settings):
  """The variants to run, grouped so that ours and its anchors run close together in time."""
  jobs = []
  for size in settings.sizes:
    for objective in settings.objectives:
      for implementation in IMPLEMENTATIONS:
        if implementation not in settings.implementations:
          continue
        if (implementation.startswith('official') or implementation == 'train') and (
            objective not in ('teams', 'electra')):
          continue
        if implementation == 'hf' and objective != 'electra':
          continue
        for setting in settings.settings:
          job = dict(implementation=implementation, objective=objective, size=size,
                     setting=setting)
          if implementation == 'train':
            train_settings = {default_settings[size] if name == 'default' else name
                              for name in settings.train_settings}
            if setting not in train_settings:
              continue
          elif implementation != 'ours' and setting not in settings.anchor_settings:
            continue
          if implementation == 'hf' and setting.endswith('_xla'):
            continue  # No XLA for eager PyTorch.
          if implementation == 'official_patched' and not setting.startswith('bf16'):
            continue  # The patch changes nothing in float32.
          if implementation == 'hf' and not hf_available:
            job['skipped'] = 'torch/transformers do not import here'
          jobs.append(job)
  return jobs


def _run_child(job, spec, directory, prefix, timeout):
  """Runs one variant in its own process; returns its result dict (status ok/failed)."""
  spec_path = os.path.join(directory, f'spec_{spec["index"]}.json')
  spec['output'] = os.path.join(directory, f'result_{spec["index"]}.json')
  with open(spec_path, 'w') as f:
    json.dump(spec, f)
  env = child_processes.environment(TF_CPP_MIN_LOG_LEVEL='1')
  process = subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, '-m', 'teams_lab.pretrain_variants', spec_path],
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
  tail = []

  def relay():
    for line in process.stderr:
      line = line.rstrip()
      if line.startswith(variants.PROGRESS_PREFIX):
        _log(f'{prefix} {line.removeprefix(variants.PROGRESS_PREFIX)}')
      elif line:
        tail[:] = (tail + [line])[-30:]

  reader = threading.Thread(target=relay, daemon=True)
  reader.start()
  try:
    returncode = process.wait(timeout=timeout)
  except subprocess.TimeoutExpired:
    process.kill()
    process.wait()
    reader.join()
    return dict(job, status='failed', error=f'timed out after {timeout} s')
  reader.join()
  if returncode or not os.path.exists(spec['output']):
    errors = [line for line in tail if 'Error' in line or 'error' in line] or tail[-1:]
    return dict(job, status='failed',
                error=(errors[-1].strip() if errors else f'exit {returncode}')[:400],
                log_tail=tail[-12:])
  with open(spec['output']) as f:
    return dict(job, status='ok', **json.load(f))


def _derive(result, peaks, batch, seq_length):
  """Adds throughput, GFLOP/s and peak fractions to a finished result."""
  median = result['step_seconds_median']
  own_peak = peaks['bfloat16' if result['setting'].startswith('bf16') else 'float32']
  gflops = result['flops_per_step'] / median / 1e9
  result.update(examples_per_second=batch / median, steps_per_second=1 / median,
                tokens_per_second=batch * seq_length / median, gflops_per_second=gflops,
                fraction_of_float32_peak=gflops / peaks['float32'],
                fraction_of_own_precision_peak=gflops / own_peak)



def run(settings, command):
  """Runs every planned variant, each in its own process, and writes the results files.

  Args:
    settings: `Settings`, checked by `check`.
    command: the command line recorded in the results.
  """
  started = datetime.datetime.now().astimezone()
  _log(f'Machine description and {settings.peak_matmul_size}^3 matmul peak ...')
  machine = _machine()
  peaks = {'start': _matmul_peak(settings.peak_matmul_size, settings.peak_repeats)}
  _log('  peak GFLOP/s: ' + ', '.join(f'{k} {v:.0f}' for k, v in peaks['start'].items()))
  hf_available = all(importlib.util.find_spec(name) for name in ('torch', 'transformers'))
  default_settings = _default_settings(settings, hardware.cpuinfo().get('flags', '').split())
  _log('  the setting teams_tf.train picks here: ' + ', '.join(
      f'{size} {setting}' for size, setting in default_settings.items()))
  jobs = _plan(settings, hf_available, default_settings)
  results, elapsed = [], {}
  with tempfile.TemporaryDirectory() as directory:
    batch_file = os.path.join(directory, 'batch.npz')
    batch_info = variants.write_batch(
        batch_file, settings.seq_length, settings.batch_size, settings.max_predictions)
    shapes_by_size = {}
    for index, job in enumerate(jobs):
      prefix = f'[{index + 1}/{len(jobs)}]'
      label = f'{job["implementation"]} {job["objective"]} {job["size"]} {job["setting"]}'
      if 'skipped' in job:
        _log(f'{prefix} {label}: skipped ({job["skipped"]})')
        results.append(dict(job, status='skipped', note=job.pop('skipped')))
        continue
      spec = dict(job, index=index, label=label, steps=settings.steps, warmup=settings.warmup,
                  seq_length=settings.seq_length, batch_size=settings.batch_size,
                  predictions=settings.max_predictions, vocab_size=settings.vocab_size,
                  batch_file=batch_file, loops=settings.train_loops)
      if job['implementation'] == 'hf':
        if job['size'] not in shapes_by_size:
          params = variants.experiment_params(
              'electra', job['size'], settings.seq_length, settings.batch_size,
              settings.max_predictions, settings.vocab_size)
          shapes_by_size[job['size']] = variants.hf_shapes(
              params, settings.batch_size, settings.seq_length, settings.max_predictions)
        spec['hf_shapes'] = shapes_by_size[job['size']]
      _log(f'{prefix} {label}: starting')
      start = time.perf_counter()
      result = _run_child(job, spec, directory, prefix, settings.variant_timeout)
      elapsed.setdefault(job['size'], []).append(time.perf_counter() - start)
      results.append(result)
      remaining = sum(statistics.mean(elapsed.get(j['size']) or sum(elapsed.values(), []))
                      for j in jobs[index + 1:] if 'skipped' not in j)
      outcome = (f'{1 / result["step_seconds_median"]:.2f} steps/s' if result['status'] == 'ok'
                 else f'FAILED: {result["error"]}')
      _log(f'{prefix} {label}: {outcome} ({elapsed[job["size"]][-1]:.0f} s); '
           f'ETA {remaining / 60:.0f} min')
  if settings.remeasure_peak:
    peaks['end'] = _matmul_peak(settings.peak_matmul_size, settings.peak_repeats)
  peaks['used'] = {dtype: max(p[dtype] for p in peaks.values()) for dtype in peaks['start']}
  for result in results:
    if result['status'] == 'ok':
      _derive(result, peaks['used'], settings.batch_size, settings.seq_length)
  report = dict(
      command=command, started=started.isoformat(timespec='seconds'),
      finished=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
      machine=machine, peak_gflops=peaks,
      shapes=dict(seq_length=settings.seq_length, batch_size=settings.batch_size,
                  max_predictions=settings.max_predictions, small_vocab_size=settings.vocab_size,
                  steps=settings.steps, warmup=settings.warmup, train_loops=settings.train_loops,
                  batch=batch_info),
      default_settings=default_settings,
      results=results)
  report.update(pretrain_report.ratios(results, default_settings, settings.settings),
                notes=pretrain_report.notes(results))
  pretrain_report.write_results(settings.output_dir, settings.output_name,
                                pretrain_report.markdown(report), report)
