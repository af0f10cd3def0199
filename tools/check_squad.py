"""SQuAD v1.1 on real text: fine-tune a kept encoder on most dev articles, score the rest.

  python tools/check_squad.py --dev_json=../shared/data/squad/dev-v1.1.json \
      --pretraining_dir=/tmp/my_bert_mini --size=mini --work_dir=/tmp/squad_check

A functional check of the SQuAD path, not a benchmark (`teams_lab/squad_check.py`):
`--held_out_articles` of the 48 articles (drawn with `--seed`) are kept out of training; the rest
train `squad_v1_<size>` from the pretraining run's encoder (`--random_init` keeps its shape and
vocabulary but not its weights); the held-out questions are scored with the official v1.1 EM/F1
beside two answers that read no model; the model is exported and asked held-out questions in a
fresh process. Writes `<out_dir>/<name>.{json,md}`. About 15 minutes for a mini encoder on 2
cores; rerunning resumes the fine-tuning from its checkpoints.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import squad_check
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_DEV_JSON = flags.DEFINE_string('dev_json', None, 'SQuAD v1.1 dev JSON (dev-v1.1.json).')
_PRETRAINING_DIR = flags.DEFINE_string(
    'pretraining_dir', None, 'teams_tf.train pretraining model_dir of the encoder to fine-tune.')
_RANDOM_INIT = flags.DEFINE_bool(
    'random_init', False, 'Fine-tune a random-init encoder of the pretraining run\'s shape.')
_SIZE = flags.DEFINE_enum('size', 'mini', ['demo', 'mini'], 'The run is squad_v1_<size>.')
_WORK_DIR = flags.DEFINE_string('work_dir', None, 'Split, records, fine-tuning run, export.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'squad_check'),
                               'Result file and report.')
_NAME = flags.DEFINE_string('name', None, 'Result name; default: pretrained or random_init.')
_HELD_OUT = flags.DEFINE_integer('held_out_articles', 8, 'Articles kept out of training.')
_SEED = flags.DEFINE_integer('seed', 1, 'Seeds the held-out articles and the served questions.')
_EPOCHS = flags.DEFINE_float('epochs', 2.0, 'Epochs over the training windows.')
_LEARNING_RATE = flags.DEFINE_float('learning_rate', 1e-3, 'Peak learning rate.')


def main(argv):
  del argv
  name = _NAME.value or ('random_init' if _RANDOM_INIT.value else 'pretrained')
  settings = squad_check.CheckSettings(
      dev_json=_DEV_JSON.value, pretraining_dir=_PRETRAINING_DIR.value,
      init_checkpoint='' if _RANDOM_INIT.value else _PRETRAINING_DIR.value, size=_SIZE.value,
      work_dir=_WORK_DIR.value, out_dir=_OUT_DIR.value, name=name,
      held_out_articles=_HELD_OUT.value, seed=_SEED.value, epochs=_EPOCHS.value,
      learning_rate=_LEARNING_RATE.value)
  command = command_lines.tool_command(__file__, [
      _DEV_JSON, _PRETRAINING_DIR, _RANDOM_INIT, _SIZE, _WORK_DIR, _NAME, _HELD_OUT, _SEED,
      _EPOCHS, _LEARNING_RATE], always=[_DEV_JSON, _PRETRAINING_DIR, _WORK_DIR])
  try:
    result = squad_check.run_check(settings, command, log=lambda line: print(line, flush=True))
  except ValueError as e:
    sys.exit(f'error: {e}')
  if result is None:
    sys.exit(1)
  for row in result['rows']:
    print(f'{row["name"]}: EM {row["exact_match"]:.1f}, F1 {row["f1"]:.1f}')
  print(f'wrote {os.path.join(_OUT_DIR.value, name)}.md')


if __name__ == '__main__':
  flags.mark_flags_as_required(['dev_json', 'pretraining_dir', 'work_dir'])
  app.run(main)
