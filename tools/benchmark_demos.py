"""Every objective's demo, run alone, beside its context-free baselines.

  python tools/benchmark_demos.py [--objectives=teams,script]

Runs each `<objective>_demo` as the README runs `teams_demo` (`python -m teams_tf.train
--mode=train_and_eval` into a new `<work_dir>/<objective>_demo`), one after another, and writes
`<out_dir>/<objective>.json` and `<out_dir>/demos.md`: each metric of the last validation beside
its context-free baseline or chance (`teams_lab/demos.py`). Finished demos are
skipped when it is run again. About 4 minutes per demo on 2 cores; run it on an otherwise idle
machine.
"""

import os

from absl import app
from absl import flags
import lab_path  # noqa: F401  (teams_lab: the clone's research harness, not installed)

from teams_lab import demos
from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.utils import command_lines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OBJECTIVES = flags.DEFINE_list('objectives', list(demos.OBJECTIVES), 'Demos to run.')
_WORK_DIR = flags.DEFINE_string('work_dir', command_lines.scratch_dir(__file__, 'demos'),
                                'Run directories and their logs.')
_OUT_DIR = flags.DEFINE_string('out_dir', os.path.join(_ROOT, 'benchmarks', 'demos'),
                               'Result files and the report.')
# Minutes a demo took alone on 2 AMD EPYC cores (README), for the estimate printed first.
_MINUTES_PER_DEMO = 4


def main(argv):
  del argv
  unknown = sorted(set(_OBJECTIVES.value) - set(demos.OBJECTIVES))
  if unknown:
    raise app.UsageError(f'unknown objectives {unknown}; use some of {demos.OBJECTIVES}')
  todo = [o for o in _OBJECTIVES.value
          if not os.path.exists(demos.result_path(_OUT_DIR.value, o))]
  print(f'{len(todo)} demo(s) to run ({", ".join(todo) or "none"}; '
        f'{len(_OBJECTIVES.value) - len(todo)} already in {_OUT_DIR.value}): about '
        f'{_MINUTES_PER_DEMO * len(todo)} minutes on 2 cores', flush=True)
  for objective in _OBJECTIVES.value:
    demos.run_demo(objective, _WORK_DIR.value, _OUT_DIR.value,
                   log=lambda line: print(line, flush=True))
  command = command_lines.tool_command(__file__, [_OBJECTIVES, _OUT_DIR])
  results = demos.write_report(_OUT_DIR.value, command)
  print(f'wrote {os.path.join(_OUT_DIR.value, "demos.md")} ({len(results)} demos)')


if __name__ == '__main__':
  app.run(main)
