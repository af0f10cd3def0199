"""Input-pipeline throughput against the training step it feeds, side by side in one run.

  python tools/benchmark_input_pipeline.py [--experiment=teams_small] [--seq_length=128]
      [--batch_size=32] [--input=sample:train] [--output=benchmarks/input_pipeline]

What is measured and how: `teams_lab/input_pipeline.py`.
"""

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import input_pipeline

_DEFAULTS = input_pipeline.Settings()
flags.DEFINE_string('experiment', _DEFAULTS.experiment, 'Experiment whose model is trained.')
flags.DEFINE_integer('seq_length', _DEFAULTS.seq_length, 'Sequence length T.')
flags.DEFINE_integer('batch_size', _DEFAULTS.batch_size, 'Batch size for both sides.')
flags.DEFINE_string('input', _DEFAULTS.input, 'Text files (comma-separated globs).')
flags.DEFINE_integer('train_steps', _DEFAULTS.train_steps, 'Timed steps (after 2 warm-up).')
flags.DEFINE_integer('pipeline_batches', _DEFAULTS.pipeline_batches, 'Timed batches per format.')
flags.DEFINE_string('output', _DEFAULTS.output, 'Results path prefix.')


def main(argv):
  del argv
  values = flags.FLAGS.flag_values_dict()
  input_pipeline.run(input_pipeline.Settings(**{name: values[name] for name in vars(_DEFAULTS)}))


if __name__ == '__main__':
  app.run(main)
