"""oneDNN's CPU kernels: on for every x86 CPU, off for `--op_determinism`, the user's choice kept.

TensorFlow turns its oneDNN kernels on by default only on x86 CPUs with AVX512_VNNI, AVX512_BF16
or AMX; on a CPU without them it keeps its own (Eigen) kernels. On a 2-core AMD EPYC with AVX2
only (family 25 model 1), switching oneDNN on made a float32 BERT-mini step about 1.5x and a
TEAMS-mini step about 1.35x faster, with the same losses (`benchmarks/pretrain_levers.md`): the
attention's batched [T, T] matmuls ran about 2x faster. So teams_tf turns them on wherever
TensorFlow would not. They are outside TensorFlow's op determinism: under CPU contention they now
and then round differently (2 of 9 identical 16-step runs, three at a time, ended with weights
1 ulp apart; 0 of 6 with oneDNN off), so a run with `--op_determinism` gets them off.

TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, when it loads: `teams_tf/__init__.py` calls
`set_default` before any teams_tf module imports TensorFlow. A value the user exported is kept.
The value set here is marked in a second variable, so that a child process (a test's or a
benchmark's `python -m teams_tf.train --op_determinism`) can tell it from the user's.
"""

import os
import platform
from typing import Sequence

ENV = 'TF_ENABLE_ONEDNN_OPTS'
# Holds the value teams_tf gave ENV; equal to ENV in a child process that inherited it.
_MARK = 'TEAMS_TF_SET_ONEDNN_OPTS'
_X86 = ('x86_64', 'amd64')


def op_determinism_requested(argv: Sequence[str]) -> bool:
  return any(arg in ('--op_determinism', '--op_determinism=true') for arg in argv)


def set_by_user() -> bool:
  """Whether ENV holds a value the user set (not one teams_tf set in this or a parent process)."""
  return ENV in os.environ and os.environ.get(_MARK) != os.environ[ENV]


def set_default(argv: Sequence[str], machine: str = '') -> None:
  """Sets ENV for this process and its children unless the user has; call before TF loads.

  Args:
    argv: the command line's arguments (sys.argv[1:]).
    machine: `platform.machine()`, e.g. 'x86_64' (given in tests).
  """
  if set_by_user():
    return
  if op_determinism_requested(argv):
    value = '0'
  elif (machine or platform.machine()).lower() in _X86:
    value = '1'
  else:
    return  # Arm and others: TensorFlow's own default.
  os.environ[ENV] = os.environ[_MARK] = value


def enabled() -> bool:
  """Whether the loaded TensorFlow runs its oneDNN kernels (TensorFlow has no public query)."""
  # pylint: disable=g-import-not-at-top
  from tensorflow.python.util import _pywrap_util_port  # Where tf.test's IsMklEnabled looks.
  return _pywrap_util_port.IsMklEnabled()


def describe() -> str:
  """Whether the loaded TensorFlow runs oneDNN kernels, and why: the training log's line."""
  on = enabled()
  state = 'on' if on else 'off'
  value = os.environ.get(ENV)
  wanted = {'1': True, 'true': True, '0': False, 'false': False}.get((value or '').lower())
  if wanted is None:
    return f"{state}, TensorFlow's default on this CPU"
  if wanted != on:
    return (f'{state}: TensorFlow was loaded before {ENV}={value} was set; set it before Python '
            'starts, or import teams_tf before TensorFlow')
  if set_by_user():
    return f'{state}, as {ENV}={value} sets it'
  if on:
    return (f"on (teams_tf's default on x86 CPUs, where TensorFlow's own leaves them off without "
            f'AVX512_VNNI, AVX512_BF16 or AMX; {ENV}=0 turns them off)')
  return 'off, for --op_determinism'
