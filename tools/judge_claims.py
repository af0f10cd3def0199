"""The seed papers' claims judged on the released encoders, from the committed units.

  python tools/judge_claims.py [--protocol=pooled]

Joins the BLiMP units (tools/benchmark_minimal_pairs.py) and the fine-tuning units and probes
(tools/benchmark_finetuning.py, tools/probe_encoders.py) into one sentence per claim and budget
(`teams_lab/verdicts.py`), written to benchmarks/verdicts.md. Seconds: it trains and
scores nothing.
"""

import os

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import finetune_protocols
from teams_lab import verdicts
from teams_tf.finetuning import glue_metrics
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROTOCOL = flags.DEFINE_enum('protocol', 'pooled', list(finetune_protocols.PROTOCOLS),
                              'The fine-tuning protocol judged (`finetune_protocols.PROTOCOLS`).')
_FINETUNING_DIR = flags.DEFINE_string(
    'finetuning_dir', os.path.join(_ROOT, 'benchmarks', 'finetuning'),
    'tools/benchmark_finetuning.py\'s out_dir.')
_MINIMAL_PAIRS_DIR = flags.DEFINE_string(
    'minimal_pairs_dir', os.path.join(_ROOT, 'benchmarks', 'minimal_pairs'),
    'tools/benchmark_minimal_pairs.py\'s out_dir.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks'),
                               'Where verdicts.md and verdicts.json go.')


def main(argv):
  del argv
  judged = verdicts.write_report(
      _FINETUNING_DIR.value, _PROTOCOL.value, _MINIMAL_PAIRS_DIR.value, _OUT_DIR.value,
      glue_metrics.resampled_headlines,
      command_lines.tool_command(__file__, (_PROTOCOL, _FINETUNING_DIR, _MINIMAL_PAIRS_DIR,
                                            _OUT_DIR)))
  for entry in judged:
    print(entry['sentence'])
  print(f'report: {os.path.join(_OUT_DIR.value, "verdicts.md")}')


if __name__ == '__main__':
  app.run(main)
