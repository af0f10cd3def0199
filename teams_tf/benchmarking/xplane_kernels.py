"""Kernel times from a TensorFlow profiler XPlane, grouped for `tools/profile_step.py`.

No flags and no TensorFlow import at module level, so that tests can import it beside the tools.
"""

import collections

# Host-side bookkeeping events of the executor and the eager runtime, not kernels.
_NOT_KERNELS = ('ExecutorState::', 'ThreadpoolListener::', 'EagerExecute', 'EagerLocalExecute',
                'EagerKernelExecute', 'KernelAndDeviceFunc::', 'TFE_', 'FunctionRun',
                'ExecutorDoneCallback', 'EagerCopyToDevice', 'ValidateInputTypeAndPlacement',
                'MemoryAllocation', 'MemoryDeallocation', 'Iterator::')


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
