"""GLUE fixtures and pretraining checkpoints shared by the fine-tuning sweep tests.

`write_glue_records` writes tiny learnable SST-2 and STS-B sets and converts them as
`tools/create_glue_data.py` does; `save_tiny_pretraining_checkpoint` saves a pretrainer as Model
Garden's trainer does. Used by tests/finetuning/sweep_test.py and tests/tools/run_glue_test.py.
"""

import os

import numpy as np
import tensorflow as tf

from teams_tf.finetuning import glue
from teams_tf.finetuning import glue_processors
from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import teams_pretrainer
from teams_tf.registry import recipes
from tests import testing_utils

SEQ_LENGTH = 32
_POSITIVE = ('good', 'great', 'best', 'beautiful', 'popular', 'important')
_NEGATIVE = ('bad', 'poor', 'worst', 'small', 'difficult', 'lost')
_NOUNS = ('film', 'story', 'music', 'book', 'game', 'city')


def _write_tsv(path, lines):
  with open(path, 'w', encoding='utf-8') as f:
    f.write('\n'.join(lines) + '\n')


def _write_glue_fixtures(root, seed=0):
  """SST-2 and STS-B folders in GLUE's layouts, with labels that follow the words (learnable)."""
  rng = np.random.default_rng(seed)
  sst2, stsb = os.path.join(root, 'SST-2'), os.path.join(root, 'STS-B')
  os.makedirs(sst2)
  os.makedirs(stsb)
  for name, size in (('train.tsv', 48), ('dev.tsv', 16)):
    rows = ['sentence\tlabel']
    for i in range(size):
      label = i % 2
      words = rng.choice(_POSITIVE if label else _NEGATIVE, 2)
      rows.append(f'the {rng.choice(_NOUNS)} is {words[0]} and {words[1]} \t{label}')
    _write_tsv(os.path.join(sst2, name), rows)
    rows = ['index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t'
            'sentence2\tscore']
    for i in range(size):
      first, second = rng.choice(_NOUNS, 2)
      score = 5.0 if i % 3 == 0 else float(rng.integers(0, 40)) / 10
      if score == 5.0:
        second = first
      rows.append(f'{i}\tmain-captions\tMSRvid\t2012test\t{i:04d}\tnone\tnone\tthe {first} is '
                  f'good.\tthe {second} is good.\t{score:.3f}')
    _write_tsv(os.path.join(stsb, name), rows)
  return {'sst2': sst2, 'stsb': stsb}


def demo_encoder_config():
  """The `*_demo` runs' encoder (pre-LN, no dropout), which glue_*_demo fine-tunes."""
  return recipes.low_budget_encoder_config('demo')


def save_tiny_pretraining_checkpoint(directory, objective='teams'):
  """A TEAMS, COCO-LM or post-LN absolute-position TEAMS ('teams_post_ln') pretrainer, the
  first two with the glue_*_demo encoder (relative positions at the demo's scale), saved as
  Model Garden's trainer saves it (checkpoint_items beside `model`)."""
  relative_positions = dict(
      relative_position_bias=True, relative_position_num_buckets=32,
      relative_position_max_distance=128,
      relative_position_bias_scale=recipes.relative_position_bias_scale('demo'))
  if objective == 'teams':
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(
        encoder=demo_encoder_config(), **relative_positions), seed=3)
  elif objective == 'coco_lm':
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(testing_utils.tiny_coco_lm_config(
        encoder=demo_encoder_config(), **relative_positions), seed=3)
  else:
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config(), seed=3)
  model(testing_utils.pretraining_batch())
  return tf.train.Checkpoint(model=model, **model.checkpoint_items).save(
      os.path.join(directory, 'ckpt'))


def write_glue_records(root, heldout_examples=0):
  """SST-2 and STS-B fixtures under `<root>/glue`, converted to records in `<root>/records`
  (with `heldout_examples` of each train set in heldout.tfrecord).

  Returns:
    The records' folder, with one `<task>/` of `tools/create_glue_data.py` outputs per task.
  """
  glue_dirs = _write_glue_fixtures(os.path.join(root, 'glue'))
  data_dir = os.path.join(root, 'records')
  vocab = glue.check_vocabulary('sample:vocab')
  for task, glue_dir in glue_dirs.items():
    glue.write_records(glue_processors.tsv_processor(task), glue_dir, vocab, True, SEQ_LENGTH,
                       os.path.join(data_dir, task), task, glue_dir,
                       heldout_examples=heldout_examples)
  return data_dir
