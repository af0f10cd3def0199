"""Linear probes of the replication's encoders on one GLUE task, layer by layer, frozen.

  python tools/probe_encoders.py [--encoders=bert,electra,random] [--task=sst2] [--pooling=cls]
  python tools/probe_encoders.py --task=stsb --pooling=pair  # sentence similarity
  python tools/probe_encoders.py --encoders=electra --learning_dir=L --out_dir=O  # other runs

Reuses the learning benchmark's pretraining runs (where its result files say they are) and the
GLUE records of `tools/replicate.py` (run it first), and writes
`benchmarks/replication/probes_<task>[_<pooling>].{md,json}`: per encoder, the dev accuracy of a
logistic regression (STS-B: the Spearman correlation of a ridge regression) on its pooled word
embeddings and on each layer's output (`teams_tf/benchmarking/probing.py`). The random-init
encoder has BERT-mini's shape, seed 0. The probed encoders' rows are put into the report already
there, so probing one new encoder keeps the others' rows.
"""

import os
import sys

from absl import app
from absl import flags
import tf_keras

from official.nlp.configs import encoders as encoder_configs

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.benchmarking import learning
from teams_tf.benchmarking import pretrain_report
from teams_tf.benchmarking import probing
from teams_tf.benchmarking import replication
from teams_tf.serving import loaders
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENCODERS = flags.DEFINE_list('encoders', ['bert', 'electra', 'teams', 'random'], 'Encoders.')
flags.register_validator('encoders', lambda names: set(names) <= set(replication.ENCODERS),
                         f'use some of {",".join(replication.ENCODERS)}.')
_TASK = flags.DEFINE_enum('task', 'sst2', list(replication.GLUE_TASKS), 'A GLUE task.')
_POOLING = flags.DEFINE_enum('pooling', 'mean', probing.POOLINGS,
                             "Layers' outputs averaged over the tokens, at [CLS], or per "
                             'sentence of a pair (STS-B).')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'replication'),
                               'Where probes_<task>[_<pooling>].{md,json} go.')
# The learning benchmark's result files say where its runs are (their `setup`).
_LEARNING_DIR = flags.DEFINE_string(
    'learning_dir', os.path.join(_ROOT, 'benchmarks', 'learning'),
    "Pretraining results (benchmark_learning.py's --out_dir), e.g. another budget's or seed's.")


def main(argv):
  del argv
  results = learning.load_results(_LEARNING_DIR.value)
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
    regression = _TASK.value in probing.REGRESSION_TASKS
    train, dev = (probing.glue_records(os.path.join(task_dir, f'{split}.tfrecord'),
                                       replication.FineTuneProtocol().max_seq_length,
                                       label_type='float' if regression else 'int')
                  for split in ('train', 'dev'))
    scores = {}
    for name, source in sources.items():
      run_dir = learning.final_run_dir(learning.Setup(**results[source]['setup']), source,
                                       results[source])
      encoder, config, _, _ = loaders.restore_pretrained_encoder(run_dir)
      if name == replication.RANDOM:
        tf_keras.utils.set_random_seed(0)
        encoder = encoder_configs.build_encoder(config)
      row = scores[replication.ENCODER_NAMES[name]] = probing.probe(
          encoder, train, dev, _POOLING.value, regression)
      print(f'{name}: ' + ', '.join(f'{100 * value:.1f}' for value in row), flush=True)
  except ValueError as e:
    sys.exit(f'error: {" ".join(str(e).split())}')
  scores = probing.merge_scores(_OUT_DIR.value, _TASK.value, _POOLING.value, scores,
                                [replication.ENCODER_NAMES[e] for e in replication.ENCODERS])
  pretrain_report.write_results(
      _OUT_DIR.value, probing.result_name(_TASK.value, _POOLING.value),
      probing.markdown(scores, _TASK.value, _POOLING.value, task_dir, command_lines.tool_command(
          __file__, (_TASK, _POOLING, _LEARNING_DIR, _OUT_DIR), always=(_TASK,))),
      dict(scores=scores, pooling=_POOLING.value))


if __name__ == '__main__':
  app.run(main)
