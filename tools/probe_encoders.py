"""Linear probes of the replication's encoders on one GLUE task, layer by layer, frozen.

  python tools/probe_encoders.py [--encoders=bert,electra,random] [--task=sst2] [--pooling=cls]
  python tools/probe_encoders.py --task=stsb --pooling=pair  # sentence similarity
  python tools/probe_encoders.py --releases=all --task=stsb --pooling=cosine  # untrained cosine
  python tools/probe_encoders.py --encoders=electra --learning_dir=L --out_dir=O  # other runs
  python tools/probe_encoders.py --releases=all --task=cola --glue_dir=../shared/data/glue
      # the releases, to benchmarks/finetuning

Reuses the learning benchmark's pretraining runs (where its result files say they are) and the
GLUE records of `tools/replicate.py` (run it first), and writes
`benchmarks/replication/probes_<task>[_<pooling>].{md,json}`: per encoder, the dev accuracy of a
logistic regression (STS-B: the Spearman correlation of a ridge regression) on its pooled word
embeddings and on each layer's output (`teams_lab/probing.py`). The random-init
encoder has BERT-mini's shape, seed 0. The probed encoders' rows are put into the report already
there, so probing one new encoder keeps the others' rows.

With --releases, the encoders are releases of --release_dir (tools/release_encoders.py), one row
each, and random init in the first one's shape; the records are tools/benchmark_finetuning.py's
(train without its held-out slice; --glue_dir converts them when they are not there yet), the
report goes to benchmarks/finetuning, and CoLA is scored by Matthews correlation.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)
import tf_keras

from official.nlp.configs import encoders as encoder_configs

from teams_lab import finetune_protocols
from teams_lab import learning
from teams_lab import learning_report
from teams_lab import pretrain_report
from teams_lab import probing
from teams_lab import release_finetuning
from teams_lab import replication
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.finetuning import glue
from teams_tf.serving import loaders
from teams_tf.training import releases
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENCODERS = flags.DEFINE_list('encoders', ['bert', 'electra', 'teams', 'random'], 'Encoders.')
flags.register_validator('encoders', lambda names: set(names) <= set(replication.ENCODERS),
                         f'use some of {",".join(replication.ENCODERS)}.')
_TASK = flags.DEFINE_enum('task', 'sst2', list(finetune_protocols.GLUE_TASKS), 'A GLUE task.')
_POOLING = flags.DEFINE_enum('pooling', 'mean', probing.POOLINGS,
                             "Layers' outputs averaged over the tokens, at [CLS], or per "
                             'sentence of a pair (STS-B), probed; or the untrained cosine of '
                             "a pair's two sentences (STS-B; `teams_lab/probing.py`).")
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'replication'),
                               'Where probes_<task>[_<pooling>].{md,json} go.')
# The learning benchmark's result files say where its runs are (their `setup`).
_LEARNING_DIR = flags.DEFINE_string(
    'learning_dir', os.path.join(_ROOT, 'benchmarks', 'learning'),
    "Pretraining results (benchmark_learning.py's --out_dir), e.g. another budget's or seed's.")
_RELEASES = flags.DEFINE_list('releases', None, "Releases of --release_dir to probe ('all': "
                              'every one) instead of the learning benchmark\'s runs.')
_RELEASE_DIR = flags.DEFINE_string('release_dir', os.path.join(_ROOT, 'benchmarks', 'encoders'),
                                   'Releases (tools/release_encoders.py).')
_GLUE_DIR = flags.DEFINE_string(
    'glue_dir', None, 'With --releases: the GLUE download, to convert the tasks for the releases '
    'where tools/benchmark_finetuning.py has not yet.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'finetuning'),
                                "tools/benchmark_finetuning.py's --work_dir (its GLUE records).")


def _probe(model_dir, random_init, task_dir):
  """The report rows of the kept encoder of `model_dir` (fresh weights, seed 0, if
  `random_init`): {'scores': its probe row}, and with --pooling=cosine its 'unrelated_cosine'."""
  regression = _TASK.value in probing.REGRESSION_TASKS

  def records(split):
    return probing.glue_records(os.path.join(task_dir, f'{split}.tfrecord'),
                                finetune_protocols.FineTuneProtocol().max_seq_length,
                                label_type='float' if regression else 'int')

  encoder, config, _, _ = loaders.restore_pretrained_encoder(model_dir)
  if random_init:
    tf_keras.utils.set_random_seed(0)
    encoder = encoder_configs.build_encoder(config)
  if _POOLING.value == 'cosine':  # Learns nothing: dev alone.
    correlations, unrelated = probing.cosine_scores(encoder, records('dev'))
    return dict(scores=correlations, unrelated_cosine=unrelated)
  return dict(scores=probing.probe(encoder, records('train'), records('dev'), _POOLING.value,
                                   regression,
                                   matthews=_RELEASES.value is not None and
                                   _TASK.value in probing.MATTHEWS_TASKS))


def _add_rows(tables, name, model_dir, random_init, task_dir):
  """Probes one encoder into `tables` (table -> encoder name -> row) and prints its scores."""
  rows = _probe(model_dir, random_init, task_dir)
  for table, row in rows.items():
    tables.setdefault(table, {})[replication.ENCODER_NAMES.get(name, name)] = row
  print(f'{name}: ' + ', '.join(f'{100 * value:.1f}' for value in rows['scores']), flush=True)


def _write(out_dir, tables, order, task_dir, command):
  """Puts `tables`' rows into the committed report (`probing.merge_scores`) and writes it."""
  merged = {table: probing.merge_scores(out_dir, _TASK.value, _POOLING.value, rows, order, table)
            for table, rows in tables.items()}
  pretrain_report.write_results(
      out_dir, probing.result_name(_TASK.value, _POOLING.value),
      probing.markdown(merged['scores'], _TASK.value, _POOLING.value, task_dir, command,
                       merged.get('unrelated_cosine')),
      dict(merged, pooling=_POOLING.value))


def _release_rows():
  """Probes the releases and random init.

  Returns:
    (table -> encoder name -> row, the task's records, every release of --release_dir in the
    report's order).
  """
  found = release_finetuning.groups(_RELEASE_DIR.value)
  paths = {os.path.basename(path): path for group in found for path in group.releases.values()}
  names = sorted(paths) if _RELEASES.value == ['all'] else _RELEASES.value
  unknown = sorted(set(names) - set(paths))
  if unknown or not names:
    raise ValueError(f'--releases: {", ".join(unknown) or "none"} not in {_RELEASE_DIR.value} '
                     f'(it has {", ".join(sorted(paths)) or "no release"}).')
  task_dir = os.path.join(release_finetuning.glue_data(
      finetune_protocols.PROTOCOLS['pooled'], paths[names[0]], _WORK_DIR.value, _GLUE_DIR.value,
      glue.convert_tsv), _TASK.value)
  if not os.path.exists(os.path.join(task_dir, 'meta_data.json')):
    raise ValueError(f'{task_dir} has no converted {_TASK.value}: pass --glue_dir (the GLUE '
                     'download, e.g. ../shared/data/glue) to convert it for the releases.')
  tables = {}
  for name in names + [replication.RANDOM]:
    _add_rows(tables, name, releases.resolve_model_dir(paths[name if name in paths else names[0]]),
              name == replication.RANDOM, task_dir)
  return tables, task_dir, sorted(paths)


def main(argv):
  del argv
  if _RELEASES.value is not None:
    out_dir = (_OUT_DIR.value if _OUT_DIR.present else
               os.path.join(_ROOT, 'benchmarks', 'finetuning'))
    try:
      tables, task_dir, every_release = _release_rows()
    except ValueError as e:
      sys.exit(f'error: {" ".join(str(e).split())}')
    # The merged table is what probing every release would write, whichever were probed now.
    command = command_lines.tool_command(__file__, (_TASK, _POOLING), always=(_TASK,))
    _write(out_dir, tables, [replication.ENCODER_NAMES[replication.RANDOM]] + every_release,
           task_dir, f'{command} --releases=all')
    return
  results = learning_report.load_results(_LEARNING_DIR.value)
  sources = {name: replication.SHAPE_FROM if name == replication.RANDOM else name
             for name in _ENCODERS.value}
  missing = sorted({source for source in sources.values() if source not in results})
  if missing:
    sys.exit(f'error: {_LEARNING_DIR.value} has no result for {", ".join(missing)}; run '
             f'tools/benchmark_learning.py --objectives={",".join(missing)} first.')
  try:
    setup = learning.Setup(**results[sources[_ENCODERS.value[0]]]['setup'])
    task_dir = os.path.join(replication.glue_data_dir(setup.work_dir, setup.vocab_size),
                            _TASK.value)
    tables = {}
    for name, source in sources.items():
      _add_rows(tables, name, learning.final_run_dir(learning.Setup(**results[source]['setup']),
                                                     source, results[source]),
                name == replication.RANDOM, task_dir)
  except ValueError as e:
    sys.exit(f'error: {" ".join(str(e).split())}')
  _write(_OUT_DIR.value, tables, [replication.ENCODER_NAMES[e] for e in replication.ENCODERS],
         task_dir, command_lines.tool_command(__file__, (_TASK, _POOLING, _LEARNING_DIR, _OUT_DIR),
                                              always=(_TASK,)))


if __name__ == '__main__':
  app.run(main)
