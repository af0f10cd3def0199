"""Where one pretraining step spends its time: TensorFlow op time by op type and by model scope.

  python tools/profile_step.py --objective=teams --size=small --setting=bf16 \
      [--implementation=ours] [--steps=3] [--top=20] [--scope_depth=2] [--logdir=/tmp/profile]

Builds the same step as `tools/benchmark_pretrain.py` (one variant: Model Garden's `train_step`
with the experiment's AdamW, on the benchmark's fixed sample batch), runs the warm-up steps, then
records `--steps` steps with the TensorFlow profiler into `--logdir` (open it with TensorBoard's
profile plugin) and prints, from the recorded XPlane, the kernel time of every executed op
grouped by op type, by model scope (the first `--scope_depth` components of the op's name, with
`gradient_tape/` kept as a prefix so that forward and backward stay apart) and the single
most expensive ops. Kernel times of ops that ran concurrently on the inter-op threads add up, so
the total exceeds the wall time; the shares are what tells one variant's costs apart.
"""

import statistics
import sys
import tempfile

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import pretrain_variants as variants
from teams_lab import xplane_kernels

_STEP = variants.define_step_flags('teams', 'small', 'bf16', seq_length=128, batch_size=32,
                                   predictions=20, vocab_size=30522)
_STEPS = flags.DEFINE_integer('steps', 3, 'Profiled steps (after the warm-up).')
_WARMUP = flags.DEFINE_integer('warmup', 2, 'Untimed steps first.')
_TOP = flags.DEFINE_integer('top', 20, 'Rows per table.')
_SCOPE_DEPTH = flags.DEFINE_integer('scope_depth', 2, 'Name components per scope group.')
_LOGDIR = flags.DEFINE_string('logdir', None, 'Profile directory (default: a new temp dir).')


def main(argv):
  del argv
  logdir = _LOGDIR.value or tempfile.mkdtemp(prefix='profile_step_')
  spec = {key: holder.value for key, holder in _STEP.items()}
  label = f'{spec["implementation"]} {spec["objective"]} {spec["size"]} {spec["setting"]}'
  built = variants.build_fixed_batch_step(spec)
  xplane, seconds = xplane_kernels.record(
      built['step'], built['batch'], _WARMUP.value, _STEPS.value, logdir,
      lambda line: variants.progress(f'{label}: {line}'))
  print(f'# Profile of {label} (B={spec["batch_size"]}, T={spec["seq_length"]}, '
        f'P={spec["predictions"]})\n')
  print(f'Wall time per profiled step: {1000 * statistics.median(seconds):.0f} ms (median); '
        f'analytic {built["flops"] / 1e9:.1f} GFLOP per step.')
  print(xplane_kernels.tables(xplane_kernels.kernel_times(xplane), _STEPS.value, _TOP.value,
                             _SCOPE_DEPTH.value))
  print(f'Profile written to {logdir} (tensorboard --logdir {logdir}, Profile tab).',
        file=sys.stderr)


if __name__ == '__main__':
  app.run(main)
