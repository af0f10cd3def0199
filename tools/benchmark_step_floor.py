r"""The floor under a pretraining step: its own matrix products, each timed alone on this machine.

  python tools/benchmark_step_floor.py                        # BERT-mini, time-to-accuracy shape
  python tools/benchmark_step_floor.py --intra_op_threads=1   # each product on one core
  python tools/benchmark_step_floor.py --objective=teams --size=small --batch_size=32 \
      --seq_length=128 --max_predictions=20 --vocab_size=30522

Builds the step of `tools/benchmark_pretrain.py` (the defaults: the `bert_mini` recipe of the
time-to-accuracy benchmark, B=64, T=64, P=25, its 7,899-token vocabulary, float32), times it,
then times every matrix product of its traced graph alone (`teams_lab/matmul_floor.py`) and a
float32 4096³ product (the matmul peak, `--peak_size`), and writes
`benchmarks/step_floor.{json,md}`, one entry per machine, step and thread setting. The floor
over the step time bounds how much faster a rewrite that keeps these products and kernels can
step. A few minutes at the mini size; run it on an otherwise idle machine.
"""

import datetime
import json
import os

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import matmul_floor
from teams_lab import pretrain_throughput
from teams_lab import pretrain_variants as variants
from teams_tf.utils import command_lines
from teams_tf.utils import hardware
from teams_tf.utils import onednn

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STEP = variants.define_step_flags('bert', 'mini', 'fp32', seq_length=64, batch_size=64,
                                   predictions=25, vocab_size=7899)
_STEPS = flags.DEFINE_integer('steps', 20, 'Timed steps (the median counts).')
_REPEATS = flags.DEFINE_integer('repeats', 20, 'Timed runs of each product (the median counts).')
_INTRA_OP_THREADS = flags.DEFINE_integer(
    'intra_op_threads', 0, 'Threads per op (0: TensorFlow\'s default, every core); 1 times each '
    'product on one core, for the floor of products run side by side, one per core.')
_PEAK_SIZE = flags.DEFINE_integer('peak_size', 4096,
                                  'n of the float32 n x n x n product timed as the matmul peak.')
_OUTPUT = flags.DEFINE_string('output', os.path.join(_ROOT, 'benchmarks', 'step_floor'),
                              'Result path without extension: .json (every entry) and .md.')


def main(argv):
  del argv
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if _INTRA_OP_THREADS.value:  # Before TensorFlow's runtime starts.
    tf.config.threading.set_intra_op_parallelism_threads(_INTRA_OP_THREADS.value)
  spec = {key: holder.value for key, holder in _STEP.items()}
  label = (f'{spec["implementation"]} {spec["objective"]} {spec["size"]} {spec["setting"]}, '
           f'B={spec["batch_size"]} T={spec["seq_length"]} P={spec["predictions"]} '
           f'V={spec["vocab_size"]}')
  built = variants.build_fixed_batch_step(spec)
  step, batch = built['step'], built['batch']
  variants.progress(f'{label}: timing {_STEPS.value} steps')
  step_seconds = matmul_floor.median_seconds(lambda: float(step(batch)), _STEPS.value)
  found = matmul_floor.products(step, batch)
  variants.progress(f'{label}: step {1000 * step_seconds:.0f} ms; timing its '
                    f'{len(found)} kinds of matrix product alone')
  cores = os.cpu_count() if _INTRA_OP_THREADS.value == 1 else 1
  result = matmul_floor.floor(found, _REPEATS.value, cores, variants.progress)
  peak = matmul_floor.peak_product(_PEAK_SIZE.value)
  peak_seconds = matmul_floor.seconds_per_run(peak, 10)
  entry = dict(
      machine=hardware.description(), step=label, onednn='on' if onednn.enabled() else 'off',
      intra_op_threads=_INTRA_OP_THREADS.value, step_ms=1000 * step_seconds,
      floor_ms=1000 * result['seconds'], serial_ms=1000 * result['serial_seconds'],
      product_flops=result['flops'], analytic_flops=built['flops'],
      peak_gflops=peak.flops / peak_seconds / 1e9, rows=result['rows'],
      command=command_lines.tool_command(
          __file__, (*_STEP.values(), _STEPS, _REPEATS, _INTRA_OP_THREADS, _PEAK_SIZE)),
      git_commit=pretrain_throughput.git_commit(), tensorflow=tf.__version__,
      date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'))
  results = {}
  if os.path.exists(_OUTPUT.value + '.json'):
    with open(_OUTPUT.value + '.json') as f:
      results = json.load(f)
  results = matmul_floor.record(results, entry)
  with open(_OUTPUT.value + '.json', 'w') as f:
    json.dump(results, f, indent=1)
  with open(_OUTPUT.value + '.md', 'w') as f:
    f.write(matmul_floor.markdown(results))
  print(f'{label}: step {entry["step_ms"]:.0f} ms, floor {entry["floor_ms"]:.0f} ms '
        f'({entry["product_flops"] / built["flops"]:.1%} of its analytic FLOPs); '
        f'wrote {_OUTPUT.value}.md and .json')


if __name__ == '__main__':
  app.run(main)
