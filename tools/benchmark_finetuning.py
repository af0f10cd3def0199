"""GLUE fine-tuning of the released encoders and random init under one protocol.

  python tools/benchmark_finetuning.py --glue_dir=../shared/data/glue [--protocol=pooled]
      [--groups=seed1] [--encoders=bert,random]
  python tools/benchmark_finetuning.py --glue_dir=G --protocol=cls_head  # the [CLS] ablation
  python tools/benchmark_finetuning.py --report_only

Unpacks every release of benchmarks/encoders (tools/release_encoders.py), converts SST-2, CoLA
and STS-B once with their vocabulary, fine-tunes each release and random init under the protocol
(`teams_lab/release_finetuning.py`, `finetune_protocols.PROTOCOLS`), one committed result a
unit in benchmarks/finetuning/<protocol>/, and writes finetuning.md there
(`teams_lab/finetuning_report.py`). Rerunning skips finished units.
"""

import functools
import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import finetune_protocols
from teams_lab import finetuning_report
from teams_lab import release_finetuning
from teams_lab import replication
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.finetuning import glue
from teams_tf.finetuning import glue_metrics
from teams_tf.finetuning import sweep
from teams_tf.training import releases
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROTOCOL = flags.DEFINE_enum('protocol', 'pooled', list(finetune_protocols.PROTOCOLS),
                              'The fine-tuning protocol (`finetune_protocols.PROTOCOLS`).')
_RELEASE_DIR = flags.DEFINE_string('release_dir', os.path.join(_ROOT, 'benchmarks', 'encoders'),
                                   'Releases to fine-tune (tools/release_encoders.py).')
_GLUE_DIR = flags.DEFINE_string('glue_dir', None,
                                'GLUE download with SST-2/, CoLA/ and STS-B/.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'finetuning'),
                                'GLUE records and the sweeps\' run directories.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'finetuning'),
                               'Committed unit results and the report.')
_GROUPS = flags.DEFINE_list('groups', None, 'Only these groups of releases (seed1, 3x_seed1).')
_ENCODERS = flags.DEFINE_list('encoders', None,
                              'Only these encoders (objectives, random), in this order.')
_REPORT_ONLY = flags.DEFINE_bool('report_only', False, 'Only rewrite the report.')


def main(argv):
  del argv
  report = functools.partial(
      finetuning_report.write_report, _OUT_DIR.value, _PROTOCOL.value,
      glue_metrics.resampled_headlines,
      command_lines.tool_command(__file__, (_PROTOCOL, _RELEASE_DIR, _OUT_DIR),
                                 always=(_PROTOCOL,)))
  if not _REPORT_ONLY.value:
    try:
      chosen = release_finetuning.select(release_finetuning.groups(_RELEASE_DIR.value),
                                         _GROUPS.value, _ENCODERS.value)
      runs = release_finetuning.prepare(
          _PROTOCOL.value, [group for group, _ in chosen],
          command_lines.required(_GLUE_DIR, '../shared/data/glue'), _OUT_DIR.value, _WORK_DIR.value,
          glue.convert_tsv, releases.resolve_model_dir)
      work = [(run, encoders) for run, (_, encoders) in zip(runs, chosen)]
      print(release_finetuning.outlook(work), flush=True)
      for run, encoders in work:
        print(f'group {os.path.basename(run.out_dir)}: {", ".join(encoders)}', flush=True)
        replication.run(run, encoders, sweep.run_fields, report)
    except ValueError as e:
      sys.exit(f'error: {" ".join(str(e).split())}')
  report()
  print(f'report: {os.path.join(_OUT_DIR.value, _PROTOCOL.value, "finetuning.md")}')


if __name__ == '__main__':
  app.run(main)
