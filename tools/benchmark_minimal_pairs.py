"""BLiMP minimal pairs over the released encoders, beside random init and the anchors.

  python tools/benchmark_minimal_pairs.py --blimp_dir=../shared/data/blimp \
      --corpus_dir=../shared/data/corpus/enwiki_2015_extract [--units=bert_seed1,...]
  python tools/benchmark_minimal_pairs.py --report_only

Scores every release in benchmarks/encoders (tools/release_encoders.py) with every method its
pretrainer has, random init of each objective's shape (one seed per pretraining seed) and the
training corpus's unigram frequencies, each a `teams-minimal-pairs` run in its own process whose
results file goes to benchmarks/minimal_pairs/ when it ends; then writes minimal_pairs.md and
.json there (`teams_lab/minimal_pairs_report.py`). Rerunning skips finished units.
Results do not depend on the machine's load; the seconds each file records do.
"""

import os
import sys

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import minimal_pairs_report
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RELEASE_DIR = flags.DEFINE_string('release_dir', os.path.join(_ROOT, 'benchmarks', 'encoders'),
                                   'Releases to score (tools/release_encoders.py).')
_BLIMP_DIR = flags.DEFINE_string('blimp_dir', None,
                                 'BLiMP <paradigm>.jsonl files and models_summary.jsonl.')
_CORPUS = flags.DEFINE_string(
    'corpus_dir', None, 'Directory of the releases\' corpus, wiki_00.txt ... wiki_49.txt')
# wiki_00-48: the releases' training files (wiki_49 is held out), the unigram baseline's counts.
_TRAINING_FILES = ('wiki_[0-3]?.txt', 'wiki_4[0-8].txt')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'minimal_pairs'),
                               'Unit results and the report.')
_UNITS = flags.DEFINE_list('units', None, 'Only these units (names as in --out_dir).')
_REPORT_ONLY = flags.DEFINE_bool('report_only', False, 'Only rewrite the report.')


def main(argv):
  del argv
  corpus = '' if _REPORT_ONLY.value else ','.join(
      os.path.join(command_lines.required(_CORPUS, '../shared/data/corpus/enwiki_2015_extract'),
                   pattern) for pattern in _TRAINING_FILES)
  units = minimal_pairs_report.plan(_RELEASE_DIR.value, corpus)
  if _UNITS.value:
    unknown = sorted(set(_UNITS.value) - {unit.name for unit in units})
    if unknown:
      sys.exit(f'error: --units: {", ".join(unknown)} are not units of the releases in '
               f'{_RELEASE_DIR.value}; use some of {", ".join(u.name for u in units)}.')
    units = [unit for unit in units if unit.name in _UNITS.value]
  if not _REPORT_ONLY.value:
    blimp_dir = command_lines.required(_BLIMP_DIR, '../shared/data/blimp')
    print(minimal_pairs_report.outlook(units, _OUT_DIR.value), flush=True)
    failed = [unit.name for unit in units
              if minimal_pairs_report.run_unit(unit, blimp_dir, _OUT_DIR.value) is None]
    if failed:
      print(f'not finished: {", ".join(failed)}', flush=True)
  minimal_pairs_report.write_report(_OUT_DIR.value, command_lines.tool_command(
      __file__, (_RELEASE_DIR, _OUT_DIR)))
  print(f'report: {os.path.join(_OUT_DIR.value, "minimal_pairs.md")}')


if __name__ == '__main__':
  app.run(main)
