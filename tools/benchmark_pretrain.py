"""Pretraining step throughput of every objective vs Model Garden's and Hugging Face's, in one run.

  python tools/benchmark_pretrain.py [--objectives=teams,electra,...] [--sizes=tiny,small]
      [--settings=fp32,fp32_xla,bf16,bf16_xla]
      [--implementations=ours,official,official_patched,hf,train] [--anchor_settings=fp32,bf16]
      [--train_settings=default] [--steps=10] [--warmup=3] [--train_loops=4]
      [--output_dir=benchmarks] [--output_name=pretrain_throughput]

What is measured and how: `teams_lab/pretrain_throughput.py`.
"""

import shlex
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import pretrain_throughput as benchmark
from teams_lab import pretrain_variants as variants

_DEFAULTS = benchmark.Settings()
flags.DEFINE_list('objectives', list(_DEFAULTS.objectives), f'Of {list(variants.OBJECTIVES)}.')
flags.DEFINE_list('sizes', list(_DEFAULTS.sizes),
                  'Sizes: tiny (demo), small; mini (the learning recipe) for ours and train only.')
flags.DEFINE_list('settings', list(_DEFAULTS.settings),
                  f'Precision/XLA settings, of {list(variants.SETTINGS)}.')
flags.DEFINE_list(
    'implementations', list(_DEFAULTS.implementations),
    'ours; official (Model Garden, for teams and electra); official_patched (the same with its '
    'samplers casting logits to float32, bf16 settings only); hf (PyTorch, electra, fp32/bf16); '
    'train (teams_tf.train end to end, teams and electra at their default setting).')
flags.DEFINE_list(
    'anchor_settings', list(_DEFAULTS.anchor_settings),
    'Settings at which the anchors (official, official_patched, hf) run; those not in --settings '
    'are skipped. XLA made Model Garden\'s pretrainers slower on CPUs (issue 9); add fp32_xla, '
    'bf16_xla to time them anyway.')
flags.DEFINE_list(
    'train_settings', list(_DEFAULTS.train_settings),
    "Settings of the end-to-end runs (of those in --settings); 'default' is the one the size's "
    'experiment runs (bf16 for small, fp32 for tiny). On CPUs without bfloat16 hardware, fp32.')
flags.DEFINE_integer('steps', _DEFAULTS.steps, 'Timed steps per variant (median reported).')
flags.DEFINE_integer('warmup', _DEFAULTS.warmup, 'Untimed steps first (tracing, compilation).')
flags.DEFINE_integer('train_loops', _DEFAULTS.train_loops,
                     'End-to-end runs: loops of --steps steps; the first is not timed as steady.')
flags.DEFINE_integer('seq_length', _DEFAULTS.seq_length, 'Sequence length T.')
flags.DEFINE_integer('batch_size', _DEFAULTS.batch_size, 'Batch size B.')
flags.DEFINE_integer('max_predictions', _DEFAULTS.max_predictions, 'Prediction slots P.')
flags.DEFINE_integer(
    'vocab_size', _DEFAULTS.vocab_size, "Vocabulary of the small models (the paper's BERT "
    "WordPiece); 0 keeps the experiments' sample vocabulary. tiny always keeps the demo's.")
flags.DEFINE_integer('peak_matmul_size', _DEFAULTS.peak_matmul_size, 'n of the n^3 peak matmul.')
flags.DEFINE_integer('peak_repeats', _DEFAULTS.peak_repeats, 'Timed matmuls per peak.')
flags.DEFINE_bool('remeasure_peak', _DEFAULTS.remeasure_peak,
                  'Measure the matmul peak again after the variants.')
flags.DEFINE_integer('variant_timeout', _DEFAULTS.variant_timeout,
                     'Seconds before a variant is stopped and reported as failed.')
flags.DEFINE_string('output_dir', _DEFAULTS.output_dir, 'Where the results files go.')
flags.DEFINE_string(
    'output_name', _DEFAULTS.output_name,
    'Results go to <output_dir>/<output_name>.{md,json}; another name keeps a partial run (a '
    'subset, another machine) from replacing the full one.')


def main(argv):
  del argv
  values = flags.FLAGS.flag_values_dict()
  settings = benchmark.Settings(**{name: values[name] for name in vars(_DEFAULTS)})
  try:
    benchmark.check(settings)
  except ValueError as error:
    raise app.UsageError(str(error)) from None
  benchmark.run(settings, shlex.join(['python'] + sys.argv))


if __name__ == '__main__':
  app.run(main)
