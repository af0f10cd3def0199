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

import os
import statistics
import sys
import tempfile

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import pretrain_variants as variants
from teams_lab import xplane_kernels

_IMPLEMENTATION = flags.DEFINE_enum('implementation', 'ours', ['ours', 'official',
                                                               'official_patched'],
                                    'Whose model: ours or Model Garden\'s (teams, electra).')
_OBJECTIVE = flags.DEFINE_enum('objective', 'teams', list(variants.OBJECTIVES), 'Objective.')
_SIZE = flags.DEFINE_enum('size', 'small', list(variants.SIZES),
                          'tiny (demo), mini (the learning recipe, ours only) or small.')
_SETTING = flags.DEFINE_enum('setting', 'bf16', list(variants.SETTINGS), 'Precision/XLA.')
_STEPS = flags.DEFINE_integer('steps', 3, 'Profiled steps (after the warm-up).')
_WARMUP = flags.DEFINE_integer('warmup', 2, 'Untimed steps first.')
_SEQ_LENGTH = flags.DEFINE_integer('seq_length', 128, 'Sequence length T.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 32, 'Batch size B.')
_MAX_PREDICTIONS = flags.DEFINE_integer('max_predictions', 20, 'Prediction slots P.')
_VOCAB_SIZE = flags.DEFINE_integer('vocab_size', 30522, 'Vocabulary of mini and small.')
_TOP = flags.DEFINE_integer('top', 20, 'Rows per table.')
_SCOPE_DEPTH = flags.DEFINE_integer('scope_depth', 2, 'Name components per scope group.')
_LOGDIR = flags.DEFINE_string('logdir', None, 'Profile directory (default: a new temp dir).')


def main(argv):
  del argv
  logdir = _LOGDIR.value or tempfile.mkdtemp(prefix='profile_step_')
  label = f'{_IMPLEMENTATION.value} {_OBJECTIVE.value} {_SIZE.value} {_SETTING.value}'
  with tempfile.TemporaryDirectory() as directory:
    batch_file = os.path.join(directory, 'batch.npz')
    variants.write_batch(batch_file, _SEQ_LENGTH.value, _BATCH_SIZE.value,
                         _MAX_PREDICTIONS.value)
    built = variants.build_tf_step(dict(
        implementation=_IMPLEMENTATION.value, objective=_OBJECTIVE.value, size=_SIZE.value,
        setting=_SETTING.value, seq_length=_SEQ_LENGTH.value, batch_size=_BATCH_SIZE.value,
        predictions=_MAX_PREDICTIONS.value, vocab_size=_VOCAB_SIZE.value,
        batch_file=batch_file))
    xplane, seconds = xplane_kernels.record(
        built['step'], built['batch'], _WARMUP.value, _STEPS.value, logdir,
        lambda line: variants.progress(f'{label}: {line}'))
  print(f'# Profile of {label} (B={_BATCH_SIZE.value}, T={_SEQ_LENGTH.value}, '
        f'P={_MAX_PREDICTIONS.value})\n')
  print(f'Wall time per profiled step: {1000 * statistics.median(seconds):.0f} ms (median); '
        f'analytic {built["flops"] / 1e9:.1f} GFLOP per step.')
  print(xplane_kernels.tables(xplane_kernels.kernel_times(xplane), _STEPS.value, _TOP.value,
                             _SCOPE_DEPTH.value))
  print(f'Profile written to {logdir} (tensorboard --logdir {logdir}, Profile tab).',
        file=sys.stderr)


if __name__ == '__main__':
  app.run(main)
