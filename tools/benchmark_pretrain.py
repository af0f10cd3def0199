"""Pretraining step throughput of every objective vs Model Garden's and Hugging Face's, in one run.

  python tools/benchmark_pretrain.py [--objectives=teams,electra,...] [--sizes=tiny,small]
      [--settings=fp32,fp32_xla,bf16,bf16_xla]
      [--implementations=ours,official,official_patched,hf,train] [--anchor_settings=fp32,bf16]
      [--train_settings=default] [--steps=10] [--warmup=3] [--train_loops=4]
      [--output_dir=benchmarks] [--output_name=pretrain_throughput]

For each objective (TEAMS, ELECTRA, ELECTRA with TEAMS's generator, BERT, COCO-LM, TACO, SCRIPT),
size ('tiny': the `<objective>_demo` model, post-LN with absolute positions; 'small':
`<objective>_small`, the paper's small) and
setting (float32 or mixed bfloat16, each with and without XLA = `jit_compile=True` on the step),
times one full training step: Model Garden's `task.train_step` (forward, every loss, backward, the
experiment's AdamW update from `train_utils.create_optimizer`, metric updates) inside `tf.function`,
on one fixed real batch of the sample corpus from the task's input pipeline (T=--seq_length,
B=--batch_size, P=--max_predictions; the same batch for every variant), `--warmup` untimed steps
(tracing, XLA compilation), then the median of `--steps` timed ones. Every variant runs in its own
process (this script with `--child_spec`), so its peak RSS (`ru_maxrss`) is its own. The small size
uses the paper's vocabulary size (`--vocab_size`, BERT's 30,522) instead of the sample's 3,660.

In the same run: this machine's float32 and bfloat16 matmul peak (median of `--peak_repeats`
products of two `--peak_matmul_size` square matrices, before and after the variants), each step's
FLOPs counted analytically (`pretrain_flops.FORMULA`, printed in the results), and as anchors
(`--implementations`): 'official', Model Garden's TEAMS (`official.projects.teams`) and ELECTRA
(`official/nlp/tasks/electra_task.py`, `ElectraPretrainer`) at the configuration of ours, fed our
batch and run with our optimizer; 'official_patched', the same with the logits cast to float32
where they enter its samplers and losses (bfloat16 settings only; unpatched it fails to build
under mixed_bfloat16); 'hf', Hugging Face's PyTorch ELECTRA modules in the same ELECTRA step, when
`torch` and `transformers` import (else reported as skipped). End to end ('train', TEAMS and
ELECTRA at `--train_settings`, by default the setting their experiment runs):
`python -m teams_tf.train` itself at the same shapes on the sample corpus as text,
`--train_loops` loops of `--steps` steps, its steady-state steps/s (loops after the first, from
Orbit's summaries) over the fixed-batch step's at the same setting
(`teams_tf/benchmarking/train_loop.py`).

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
(`pretrain_benchmark_report.MODEL_GARDEN_DIFFERENCES`). Results go to
`<output_dir>/pretrain_throughput.md` and `.json`.
"""

import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from absl import app
from absl import flags

import pretrain_benchmark_report
import pretrain_benchmark_variants as variants

_IMPLEMENTATION_NAMES = ('ours', 'official', 'official_patched', 'hf', 'train')
_OBJECTIVES = flags.DEFINE_list('objectives', list(variants.OBJECTIVES),
                                f'Objectives, of {list(variants.OBJECTIVES)}.')
_SIZES = flags.DEFINE_list('sizes', list(variants.SIZES), 'Sizes: tiny (demo), small.')
_SETTINGS = flags.DEFINE_list('settings', list(variants.SETTINGS),
                              f'Precision/XLA settings, of {list(variants.SETTINGS)}.')
_IMPLEMENTATIONS = flags.DEFINE_list(
    'implementations', list(_IMPLEMENTATION_NAMES),
    'ours; official (Model Garden, for teams and electra); official_patched (the same with its '
    'samplers casting logits to float32, bf16 settings only); hf (PyTorch, electra, fp32/bf16); '
    'train (teams_tf.train end to end, teams and electra at their default setting).')
_ANCHOR_SETTINGS = flags.DEFINE_list(
    'anchor_settings', ['fp32', 'bf16'],
    'Settings at which the anchors (official, official_patched, hf) run; those not in --settings '
    'are skipped. XLA made Model Garden\'s pretrainers slower on CPUs (issue 9); add fp32_xla, '
    'bf16_xla to time them anyway.')
_STEPS = flags.DEFINE_integer('steps', 10, 'Timed steps per variant (median reported).')
_WARMUP = flags.DEFINE_integer('warmup', 3, 'Untimed steps first (tracing, XLA compilation).')
_TRAIN_LOOPS = flags.DEFINE_integer(
    'train_loops', 4, 'End-to-end runs: loops of --steps steps; the first is not timed as steady.')
_TRAIN_SETTINGS = flags.DEFINE_list(
    'train_settings', ['default'],
    "Settings of the end-to-end runs (of those in --settings); 'default' is the one the size's "
    'experiment runs (bf16 for small, fp32 for tiny). On CPUs without bfloat16 hardware, fp32.')
_SEQ_LENGTH = flags.DEFINE_integer('seq_length', 128, 'Sequence length T.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 32, 'Batch size B.')
_MAX_PREDICTIONS = flags.DEFINE_integer('max_predictions', 20, 'Prediction slots P per sequence.')
_VOCAB_SIZE = flags.DEFINE_integer(
    'vocab_size', 30522, "Vocabulary of the small models (the paper's BERT WordPiece); 0 keeps "
    "the experiments' sample vocabulary. tiny always keeps the demo's.")
_PEAK_MATMUL_SIZE = flags.DEFINE_integer('peak_matmul_size', 4096, 'n of the n x n peak matmul.')
_PEAK_REPEATS = flags.DEFINE_integer('peak_repeats', 10, 'Timed matmuls per peak measurement.')
_REMEASURE_PEAK = flags.DEFINE_bool('remeasure_peak', True,
                                    'Measure the matmul peak again after the variants.')
_VARIANT_TIMEOUT = flags.DEFINE_integer('variant_timeout', 3600, 'Seconds before a variant is '
                                        'stopped and reported as failed.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'benchmarks', 'Where the results files go.')
_OUTPUT_NAME = flags.DEFINE_string(
    'output_name', 'pretrain_throughput',
    'Results go to <output_dir>/<output_name>.{md,json}; another name keeps a partial run (a '
    'subset, another machine) from replacing the full one.')
_CHILD_SPEC = flags.DEFINE_string('child_spec', None, 'Internal: run one variant (JSON spec).')

def _log(message):
  print(message, file=sys.stderr, flush=True)


def _check_flags():
  for flag, known in ((_OBJECTIVES, variants.OBJECTIVES), (_SIZES, variants.SIZES),
                      (_SETTINGS, variants.SETTINGS), (_ANCHOR_SETTINGS, variants.SETTINGS),
                      (_TRAIN_SETTINGS, ('default', *variants.SETTINGS)),
                      (_IMPLEMENTATIONS, _IMPLEMENTATION_NAMES)):
    unknown = [value for value in flag.value if value not in known]
    if unknown:
      raise app.UsageError(f'--{flag.name}: unknown {unknown}; use some of {list(known)}.')
  if _STEPS.value < 1 or _WARMUP.value < 1:
    raise app.UsageError('--steps and --warmup must be >= 1 (the first step traces and '
                         'compiles; it is never timed).')
  if _TRAIN_LOOPS.value < 2:
    raise app.UsageError('--train_loops must be >= 2 (the first loop traces and compiles; the '
                         'steady state is the loops after it).')


def _machine():
  """CPU model, cores, memory, bfloat16 support and software versions."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpuinfo = {}
  if os.path.exists('/proc/cpuinfo'):
    with open('/proc/cpuinfo') as f:
      for line in f:
        key, _, value = line.partition(':')
        cpuinfo.setdefault(key.strip(), value.strip())
  memory_gib = None
  if os.path.exists('/proc/meminfo'):
    with open('/proc/meminfo') as f:
      memory_gib = round(int(f.readline().split()[1]) / 2**20, 1)
  commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True,
                          text=True, check=False).stdout.strip()
  dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                         capture_output=True, text=True, check=False).stdout.strip()
  versions = {}
  for package in ('tf-models-official', 'torch', 'transformers'):
    try:
      versions[package] = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
      versions[package] = None
  return dict(cpu=cpuinfo.get('model name', platform.processor()), cpus=os.cpu_count(),
              avx512_bf16='avx512_bf16' in cpuinfo.get('flags', '').split(),
              memory_gib=memory_gib, platform=platform.platform(),
              python=platform.python_version(), tensorflow=tf.__version__,
              git_commit=commit + ('+uncommitted changes' if dirty else ''), **versions)


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


def _plan(hf_available, default_settings):
  """The variants to run, grouped so that ours and its anchors run close together in time."""
  jobs = []
  for size in _SIZES.value:
    for objective in _OBJECTIVES.value:
      for implementation in _IMPLEMENTATION_NAMES:
        if implementation not in _IMPLEMENTATIONS.value:
          continue
        if (implementation.startswith('official') or implementation == 'train') and (
            objective not in ('teams', 'electra')):
          continue
        if implementation == 'hf' and objective != 'electra':
          continue
        for setting in _SETTINGS.value:
          job = dict(implementation=implementation, objective=objective, size=size,
                     setting=setting)
          if implementation == 'train':
            train_settings = {default_settings[size] if name == 'default' else name
                              for name in _TRAIN_SETTINGS.value}
            if setting not in train_settings:
              continue
          elif implementation != 'ours' and setting not in _ANCHOR_SETTINGS.value:
            continue
          if implementation == 'hf' and setting.endswith('_xla'):
            continue  # No XLA for eager PyTorch.
          if implementation == 'official_patched' and not setting.startswith('bf16'):
            continue  # The patch changes nothing in float32.
          if implementation == 'hf' and not hf_available:
            job['skipped'] = 'torch/transformers do not import here'
          jobs.append(job)
  return jobs


def _run_child(job, spec, directory, prefix):
  """Runs one variant in its own process; returns its result dict (status ok/failed)."""
  spec_path = os.path.join(directory, f'spec_{spec["index"]}.json')
  spec['output'] = os.path.join(directory, f'result_{spec["index"]}.json')
  with open(spec_path, 'w') as f:
    json.dump(spec, f)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='1')
  process = subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, os.path.abspath(__file__), f'--child_spec={spec_path}'],
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
  tail = []

  def relay():
    for line in process.stderr:
      line = line.rstrip()
      if line.startswith('benchmark_pretrain: '):
        _log(f'{prefix} {line[len("benchmark_pretrain: "):]}')
      elif line:
        tail[:] = (tail + [line])[-30:]

  reader = threading.Thread(target=relay, daemon=True)
  reader.start()
  try:
    returncode = process.wait(timeout=_VARIANT_TIMEOUT.value)
  except subprocess.TimeoutExpired:
    process.kill()
    process.wait()
    reader.join()
    return dict(job, status='failed', error=f'timed out after {_VARIANT_TIMEOUT.value} s')
  reader.join()
  if returncode or not os.path.exists(spec['output']):
    errors = [line for line in tail if 'Error' in line or 'error' in line] or tail[-1:]
    return dict(job, status='failed',
                error=(errors[-1].strip() if errors else f'exit {returncode}')[:400],
                log_tail=tail[-12:])
  with open(spec['output']) as f:
    return dict(job, status='ok', **json.load(f))


def _derive(result, peaks):
  """Adds throughput, GFLOP/s and peak fractions to a finished result."""
  median = result['step_seconds_median']
  batch, seq_length = _BATCH_SIZE.value, _SEQ_LENGTH.value
  own_peak = peaks['bfloat16' if result['setting'].startswith('bf16') else 'float32']
  gflops = result['flops_per_step'] / median / 1e9
  result.update(examples_per_second=batch / median, steps_per_second=1 / median,
                tokens_per_second=batch * seq_length / median, gflops_per_second=gflops,
                fraction_of_float32_peak=gflops / peaks['float32'],
                fraction_of_own_precision_peak=gflops / own_peak)


def main(argv):
  del argv
  if _CHILD_SPEC.value:
    variants.run_child(_CHILD_SPEC.value)
    sys.stderr.flush()
    # The result is written; TensorFlow's interpreter teardown would add seconds per variant.
    os._exit(0)  # pylint: disable=protected-access
  _check_flags()
  command = shlex.join(['python'] + sys.argv)
  started = datetime.datetime.now().astimezone()
  _log(f'Machine description and {_PEAK_MATMUL_SIZE.value}^3 matmul peak ...')
  machine = _machine()
  peaks = {'start': _matmul_peak(_PEAK_MATMUL_SIZE.value, _PEAK_REPEATS.value)}
  _log('  peak GFLOP/s: ' + ', '.join(f'{k} {v:.0f}' for k, v in peaks['start'].items()))
  hf_available = all(importlib.util.find_spec(name) for name in ('torch', 'transformers'))
  default_settings = {
      size: 'bf16' if variants.experiment_params(
          'teams', size, _SEQ_LENGTH.value, _BATCH_SIZE.value, _MAX_PREDICTIONS.value,
          0).runtime.mixed_precision_dtype == 'bfloat16' else 'fp32'
      for size in _SIZES.value}
  jobs = _plan(hf_available, default_settings)
  results, elapsed = [], {}
  with tempfile.TemporaryDirectory() as directory:
    batch_file = os.path.join(directory, 'batch.npz')
    batch_info = variants.write_batch(
        batch_file, _SEQ_LENGTH.value, _BATCH_SIZE.value, _MAX_PREDICTIONS.value)
    shapes_by_size = {}
    for index, job in enumerate(jobs):
      prefix = f'[{index + 1}/{len(jobs)}]'
      label = f'{job["implementation"]} {job["objective"]} {job["size"]} {job["setting"]}'
      if 'skipped' in job:
        _log(f'{prefix} {label}: skipped ({job["skipped"]})')
        results.append(dict(job, status='skipped', note=job.pop('skipped')))
        continue
      spec = dict(job, index=index, label=label, steps=_STEPS.value, warmup=_WARMUP.value,
                  seq_length=_SEQ_LENGTH.value, batch_size=_BATCH_SIZE.value,
                  predictions=_MAX_PREDICTIONS.value, vocab_size=_VOCAB_SIZE.value,
                  batch_file=batch_file, loops=_TRAIN_LOOPS.value)
      if job['implementation'] == 'hf':
        if job['size'] not in shapes_by_size:
          params = variants.experiment_params(
              'electra', job['size'], _SEQ_LENGTH.value, _BATCH_SIZE.value,
              _MAX_PREDICTIONS.value, _VOCAB_SIZE.value)
          shapes_by_size[job['size']] = variants.hf_shapes(
              params, _BATCH_SIZE.value, _SEQ_LENGTH.value, _MAX_PREDICTIONS.value)
        spec['hf_shapes'] = shapes_by_size[job['size']]
      _log(f'{prefix} {label}: starting')
      start = time.perf_counter()
      result = _run_child(job, spec, directory, prefix)
      elapsed.setdefault(job['size'], []).append(time.perf_counter() - start)
      results.append(result)
      remaining = sum(statistics.mean(elapsed.get(j['size']) or sum(elapsed.values(), []))
                      for j in jobs[index + 1:] if 'skipped' not in j)
      outcome = (f'{1 / result["step_seconds_median"]:.2f} steps/s' if result['status'] == 'ok'
                 else f'FAILED: {result["error"]}')
      _log(f'{prefix} {label}: {outcome} ({elapsed[job["size"]][-1]:.0f} s); '
           f'ETA {remaining / 60:.0f} min')
  if _REMEASURE_PEAK.value:
    peaks['end'] = _matmul_peak(_PEAK_MATMUL_SIZE.value, _PEAK_REPEATS.value)
  peaks['used'] = {dtype: max(p[dtype] for p in peaks.values()) for dtype in peaks['start']}
  for result in results:
    if result['status'] == 'ok':
      _derive(result, peaks['used'])
  report = dict(
      command=command, started=started.isoformat(timespec='seconds'),
      finished=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
      machine=machine, peak_gflops=peaks,
      shapes=dict(seq_length=_SEQ_LENGTH.value, batch_size=_BATCH_SIZE.value,
                  max_predictions=_MAX_PREDICTIONS.value, small_vocab_size=_VOCAB_SIZE.value,
                  steps=_STEPS.value, warmup=_WARMUP.value, train_loops=_TRAIN_LOOPS.value,
                  batch=batch_info),
      default_settings=default_settings,
      results=results)
  report.update(pretrain_benchmark_report.ratios(results, default_settings, _SETTINGS.value),
                notes=pretrain_benchmark_report.notes(results))
  pretrain_benchmark_report.write_results(
      _OUTPUT_DIR.value, _OUTPUT_NAME.value, pretrain_benchmark_report.markdown(report), report)


if __name__ == '__main__':
  app.run(main)
