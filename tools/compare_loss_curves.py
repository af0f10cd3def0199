"""Do our TEAMS and Model Garden's TEAMS learn alike? Loss curves for the same seeds and data.

  python tools/compare_loss_curves.py [--size=tiny] [--steps=300] [--seeds=0,1] [--window=25]
      [--setting=fp32] [--output_dir=benchmarks]

Trains our TEAMS (`teams_<size>`) and Model Garden's TEAMS (`official.projects.teams`, mapped to
the same configuration as in `tools/benchmark_pretrain.py`) from scratch, each with every seed
in `--seeds`; a seed fixes the initial weights, the sampling and the stream of batches from our
input pipeline over the embedded sample corpus (masks and text order; T, B, P as the
benchmark), and both implementations train on the same stream for the same seed, with the
experiment's AdamW schedule. Both report the generator's MLM loss, the RTD loss, the MWS
loss and their weighted sum per step. The implementations agree "within noise" when the gap
between them, for the same seed, is no larger than the gap between two seeds of one
implementation: the tool prints and writes (`<output_dir>/loss_curves.md` and `.json`) the
windowed means per run, and per loss term the mean absolute gap ours-vs-official (same seed)
beside the seed-vs-seed gap of each implementation, over the second half of training.
"""

import shlex
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import loss_curves_report as report_lib
from teams_lab import pretrain_report
from teams_lab import pretrain_variants as variants

_SIZE = flags.DEFINE_enum('size', 'tiny', list(variants.SIZES), 'tiny (demo) or small.')
_STEPS = flags.DEFINE_integer('steps', 300, 'Training steps per run.')
_SEEDS = flags.DEFINE_list('seeds', ['0', '1'], 'Initialisation/sampling seeds (>= 2).')
_WINDOW = flags.DEFINE_integer('window', 25, 'Steps per averaged point of a curve.')
_SETTING = flags.DEFINE_enum('setting', 'fp32', ['fp32', 'bf16'], 'Precision of both.')
_SEQ_LENGTH = flags.DEFINE_integer('seq_length', 128, 'Sequence length T.')
_BATCH_SIZE = flags.DEFINE_integer('batch_size', 32, 'Batch size B.')
_MAX_PREDICTIONS = flags.DEFINE_integer('max_predictions', 20, 'Prediction slots P.')
_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'benchmarks', 'Where the results files go.')

OUTPUT_NAME = 'loss_curves'


def main(argv):
  del argv
  seeds = [int(seed) for seed in _SEEDS.value]
  if len(seeds) < 2:
    raise app.UsageError('--seeds needs at least two seeds to measure seed-to-seed noise.')
  runs = {}
  for seed in seeds:
    data = variants.sample_batches(_STEPS.value, _SEQ_LENGTH.value, _BATCH_SIZE.value,
                                   _MAX_PREDICTIONS.value, seed)
    for implementation in report_lib.IMPLEMENTATIONS:
      runs[(implementation, seed)] = variants.loss_curves(dict(
          implementation=implementation, objective='teams', size=_SIZE.value,
          setting=_SETTING.value, seq_length=_SEQ_LENGTH.value, batch_size=_BATCH_SIZE.value,
          predictions=_MAX_PREDICTIONS.value, vocab_size=0, seed=seed), data,
          report_lib.TERMS, _WINDOW.value)
  report = dict(
      command=shlex.join(['python'] + sys.argv), size=_SIZE.value, setting=_SETTING.value,
      steps=_STEPS.value, seeds=seeds, window=_WINDOW.value, seq_length=_SEQ_LENGTH.value,
      batch_size=_BATCH_SIZE.value, max_predictions=_MAX_PREDICTIONS.value,
      gaps=report_lib.gaps(runs, seeds, _WINDOW.value),
      curves={f'{implementation} seed {seed}': curves
              for (implementation, seed), curves in runs.items()})
  pretrain_report.write_results(_OUTPUT_DIR.value, OUTPUT_NAME, report_lib.markdown(report),
                                report)


if __name__ == '__main__':
  app.run(main)
