"""Profiles training steps and groups the kernel times of the XPlane for `tools/profile_step.py`.

No flags and no TensorFlow import at module level, so that tests can import it beside the tools.
"""

import collections
import glob
import os
import time

# Host-side bookkeeping events of the executor and the eager runtime, not kernels.
_NOT_KERNELS = ('ExecutorState::', 'ThreadpoolListener::', 'EagerExecute', 'EagerLocalExecute',
                'EagerKernelExecute', 'KernelAndDeviceFunc::', 'TFE_', 'FunctionRun',
                'ExecutorDoneCallback', 'EagerCopyToDevice', 'ValidateInputTypeAndPlacement',
                'MemoryAllocation', 'MemoryDeallocation', 'Iterator::')


def record(step, batch, warmup, steps, logdir, progress):
  """Runs `warmup` untimed steps, then `steps` steps under the TensorFlow profiler.

  Args:
    step: a function of `batch` returning a tensor (the compiled training step).
    batch: its input.
    warmup: steps before the profiler starts (tracing and compilation stay out of the profile).
    steps: profiled steps.
    logdir: the profiler's output directory.
    progress: called with a line per step.

  Returns:
    (path of the newest XPlane under `logdir`, wall seconds of each profiled step).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for i in range(warmup):
    start = time.perf_counter()
    step(batch).numpy()
    progress(f'warm-up {i + 1}/{warmup}: {time.perf_counter() - start:.2f} s')
  tf.profiler.experimental.start(logdir)
  seconds = []
  for i in range(steps):
    start = time.perf_counter()
    step(batch).numpy()
    seconds.append(time.perf_counter() - start)
    progress(f'profiled step {i + 1}/{steps}: {seconds[-1]:.2f} s')
  tf.profiler.experimental.stop()
  return max(glob.glob(os.path.join(logdir, '**', '*.xplane.pb'), recursive=True),
             key=os.path.getmtime), seconds


def kernel_times(xplane_path):
  """{(op name, op type): total picoseconds} of the kernels recorded on the host CPU plane.

  TensorFlow names a kernel event '<node name>:<op type>'; everything else on the plane (the
  Python call, executor and thread-pool bookkeeping) is skipped.
  """
  from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=g-import-not-at-top
  space = xplane_pb2.XSpace()
  with open(xplane_path, 'rb') as f:
    space.ParseFromString(f.read())
  times = collections.Counter()
  for plane in space.planes:
    if plane.name != '/host:CPU':
      continue
    for line in plane.lines:
      if line.name == 'python':
        continue
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        if ':' not in name or name.startswith(_NOT_KERNELS):
          continue
        node, _, op_type = name.rpartition(':')
        times[(node, op_type)] += event.duration_ps
  return times


def scope(node, depth):
  """The first `depth` name components of a node, after a `gradient_tape/` prefix if any."""
  prefix = ''
  if node.startswith('gradient_tape/'):
    prefix, node = 'gradient_tape/', node[len('gradient_tape/'):]
  return prefix + '/'.join(node.split('/')[:depth])


def tables(times, steps, top, depth):
  """Markdown tables of ms per step by op type, by scope and per op."""
  total = sum(times.values())
  lines = [f'Kernel time summed over threads: {total / 1e9 / steps:.0f} ms per step.', '']
  by_type, by_scope = collections.Counter(), collections.Counter()
  for (node, op_type), ps in times.items():
    by_type[op_type] += ps
    by_scope[scope(node, depth)] += ps
  named = collections.Counter({f'{node} ({op_type})': ps for (node, op_type), ps in times.items()})
  for title, counter in (('op type', by_type), ('scope', by_scope), ('op', named)):
    lines += [f'| {title} | ms per step | share |', '|---|---|---|']
    for key, ps in counter.most_common(top):
      lines.append(f'| {key} | {ps / 1e9 / steps:.1f} | {100 * ps / total:.1f}% |')
    lines.append('')
  return '\n'.join(lines)
