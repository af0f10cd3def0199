"""Parameter counts (kept encoder, generator, total trained) of pretraining experiments.

  python tools/count_parameters.py [--experiments=bert_small,electra_small,...]
      [--vocab_size=30522] [--output=benchmarks/parameter_counts]

Builds each experiment's pretrainer with `--vocab_size` (BERT's uncased WordPiece vocabulary by
default, the one behind the TEAMS paper's 14M / 110M / 335M), runs one tiny batch through it
to create the variables and counts them with `teams_tf.models.parameter_counts`. The default
experiments are every registered pretraining experiment of the paper sizes (small, base, large;
about 1.5 minutes on 2 CPU cores). Writes `<output>.md` and `<output>.json`.
"""

import os

from absl import app
from absl import flags
from absl import logging
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import experiment_counts
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.registry import experiments
from teams_tf.utils import atomic_files

_EXPERIMENTS = flags.DEFINE_list(
    'experiments', None,
    'Pretraining experiments to count; default every small, base and large one.')
_VOCAB_SIZE = flags.DEFINE_integer('vocab_size', 30522, 'Vocabulary size V of the encoders.')
_OUTPUT = flags.DEFINE_string(
    'output', os.path.join(os.path.dirname(__file__), '..', 'benchmarks', 'parameter_counts'),
    'Results path without extension (.md and .json are written).')

# TEAMS paper, Table 1: size of the kept encoder.
_PAPER_SIZES = {'small': '14M', 'base': '110M', 'large': '335M'}


def _millions(value):
  return f'{value / 1e6:.2f}M'


def main(_):
  logging.set_verbosity(logging.WARNING)  # Model Garden logs every encoder's full config.
  names = _EXPERIMENTS.value or [
      name for name in experiments.experiment_names()
      if experiments.is_pretraining(name) and
      experiments.split_name(name)[1] in _PAPER_SIZES]
  rows = []
  for i, name in enumerate(names, 1):
    counts = experiment_counts.count(name, _VOCAB_SIZE.value)
    rows.append(dict(experiment=name, **counts))
    print(f'[{i}/{len(names)}] {name}: kept encoder {_millions(counts["kept_encoder"])}, '
          f'generator {_millions(counts["generator"])}, '
          f'total trained {_millions(counts["total_trained"])}', flush=True)
  sizes = [size for size in _PAPER_SIZES if any(f'_{size}' in n for n in names)]
  lines = [
      f'# Parameter counts (vocabulary {_VOCAB_SIZE.value})', '',
      '`python tools/count_parameters.py` — kept encoder = what fine-tuning restores (paper '
      'Table 1: ' + ', '.join(f'{s} {_PAPER_SIZES[s]}' for s in sizes) + '); generator = '
      'variables only the generator and its MLM head use; total trained = every distinct '
      'trainable variable of the pretrainer.', '',
      '| experiment | kept encoder | generator | total trained |', '|---|---:|---:|---:|']
  lines += [f'| {row["experiment"]} | {_millions(row["kept_encoder"])} | '
            f'{_millions(row["generator"])} | {_millions(row["total_trained"])} |' for row in rows]
  output = _OUTPUT.value
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  atomic_files.write_text(output + '.md', '\n'.join(lines) + '\n')
  atomic_files.write_json(output + '.json', dict(vocab_size=_VOCAB_SIZE.value, rows=rows))
  print(f'wrote {os.path.normpath(output)}.md and .json')


if __name__ == '__main__':
  app.run(main)
