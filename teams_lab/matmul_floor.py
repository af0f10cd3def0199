"""The floor under a training step: its own matrix products, each timed alone on this machine.

A training step's matrix products (forward, and the two of each product's gradient) carry
nearly all of its FLOPs. Read from the step's traced graph, with the exact shapes, transposes and
equations TensorFlow runs, and timed one at a time with the same kernels (oneDNN where it is on),
their summed time is what the step would take with every other op free. No implementation
that runs these products through these kernels steps faster than that, which bounds how much
faster than a measured step a rewrite can go without changing the products themselves (merging
them, as Q, K and V into one, or other kernels) (`tools/benchmark_step_floor.py`).
"""

import collections
import dataclasses
import statistics
import time
from typing import Callable

import numpy as np
import tensorflow as tf

# The graph ops that multiply matrices, and how each is rebuilt alone from its attributes.
_PRODUCT_ATTRIBUTES = {
    'MatMul': ('transpose_a', 'transpose_b'),
    'BatchMatMulV2': ('adj_x', 'adj_y'),
    'BatchMatMulV3': ('adj_x', 'adj_y'),
    'Einsum': ('equation',),
}
# Their operands' argument names in `tf.raw_ops` (Einsum takes a list).
_OPERANDS = {'MatMul': ('a', 'b'), 'BatchMatMulV2': ('x', 'y'), 'BatchMatMulV3': ('x', 'y')}


@dataclasses.dataclass(frozen=True)
class Product:
  """One kind of matrix product in a step: op type, input shapes and dtype, attributes."""
  op_type: str
  shapes: tuple[tuple[int, ...], ...]
  dtype: str
  attributes: tuple[tuple[str, object], ...]

  @property
  def flops(self) -> int:
    """Multiply-adds times 2 (the convention of `teams_tf.training.experiment_flops`)."""
    attributes = dict(self.attributes)
    if self.op_type == 'Einsum':
      inputs, _ = attributes['equation'].split('->')
      sizes = {}
      for operand, shape in zip(inputs.split(','), self.shapes):
        sizes.update(zip(operand, shape))
      return 2 * int(np.prod(list(sizes.values()), dtype=np.int64))
    a, b = self.shapes
    transpose_a, transpose_b = (attributes[name] for name in _PRODUCT_ATTRIBUTES[self.op_type])
    rows, inner = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
    columns = b[-2] if transpose_b else b[-1]
    batch = int(np.prod(np.broadcast_shapes(a[:-2], b[:-2]), dtype=np.int64))
    return 2 * batch * rows * inner * columns

  def describe(self) -> str:
    shapes = ' x '.join('[' + ', '.join(map(str, shape)) + ']' for shape in self.shapes)
    flags = ', '.join(f'{name}={value}' for name, value in self.attributes
                      if value is not False)
    return f'{self.op_type} {shapes}{f" ({flags})" if flags else ""}'


def products(function: Callable, *args) -> collections.Counter:
  """The matrix products of `function(*args)`'s graph: `Product` -> how many times it runs.

  Args:
    function: a `tf.function`, traced here for `args` (its step's graph, gradients included).
    *args: its inputs.

  Raises:
    ValueError: a product whose shapes are not static in that trace (they cannot be timed
      alone); trace the step on a batch of fixed shape.
  """
  graph = function.get_concrete_function(*args).graph
  found = collections.Counter()
  for op in graph.get_operations():
    if op.type not in _PRODUCT_ATTRIBUTES:
      continue
    shapes = tuple(tuple(tensor.shape.as_list()) for tensor in op.inputs)
    if any(None in shape for shape in shapes):
      raise ValueError(f'{op.type} {op.name} has inputs of unknown shape {shapes}: trace the '
                       'step on a batch of fixed shape to time its products.')
    attributes = tuple(
        (name, op.get_attr(name).decode() if name == 'equation' else op.get_attr(name))
        for name in _PRODUCT_ATTRIBUTES[op.type])
    found[Product(op.type, shapes, op.inputs[0].dtype.name, attributes)] += 1
  return found


def _run_alone(product: Product, runs: int = 1) -> Callable[[], None]:
  """A call that runs `product` `runs` times on random inputs, one after the other, and waits.

  The runs share one graph call, so that a product of a fraction of a millisecond is not timed
  with the call's own overhead; they cannot overlap (one loop iteration at a time). Each run
  reads the same inputs, in cache where they fit: if anything faster than in the step, which
  keeps the floor a floor.
  """
  inputs = [tf.cast(tf.random.stateless_normal(shape, seed=[index, 0]), product.dtype)
            for index, shape in enumerate(product.shapes)]
  op = getattr(tf.raw_ops, product.op_type)
  attributes = dict(product.attributes)
  if product.op_type == 'BatchMatMulV3':  # Its output dtype, that of the inputs in a step.
    attributes['Tout'] = product.dtype

  def once(operands):
    if product.op_type == 'Einsum':
      return op(inputs=list(operands), **attributes)
    return op(**dict(zip(_OPERANDS[product.op_type], operands)), **attributes)

  @tf.function
  def run(*operands):
    def body(index, checksum):
      # One element of each result: the loop waits for it without copying the product out.
      return index + 1, checksum + tf.cast(tf.reshape(once(operands), [-1])[0], tf.float32)

    return tf.while_loop(lambda index, _: index < runs, body, (0, 0.0),
                         parallel_iterations=1)[1]

  return lambda: run(*inputs).numpy()


def median_seconds(call: Callable[[], None], repeats: int, warmup: int = 2) -> float:
  """Median wall seconds of `call` over `repeats` calls after `warmup` untimed ones."""
  for _ in range(warmup):
    call()
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def seconds_per_run(product: Product, repeats: int, call_seconds: float = 0.05) -> float:
  """Median seconds of one run of `product` alone, from calls of about `call_seconds` each."""
  once = median_seconds(_run_alone(product), 3, warmup=1)
  runs = int(min(max(call_seconds / once, 1), 1000))
  return median_seconds(_run_alone(product, runs), repeats) / runs


def floor(found: collections.Counter, repeats: int, cores_in_parallel: int = 1,
          progress: Callable[[str], None] = lambda line: None) -> dict:
  """Times every product in `found` alone; the floor is their time summed over the step.

  Args:
    found: `products` of a step.
    repeats: timed runs of each product (the median counts).
    cores_in_parallel: how many of the products could run at once, one per core: 1 when each
      runs on every core, the core count when each runs on one.
    progress: called with a line per product.

  Returns:
    Dict: `rows` (per product, most time first: `product`, `count`, `gflop` per run, `ms` per
    run, `gflops`), `serial_seconds` (each product's median times its count, summed),
    `seconds` (the floor: that over `cores_in_parallel`) and `flops`.
  """
  rows = []
  for index, (product, count) in enumerate(found.items()):
    seconds = seconds_per_run(product, repeats)
    rows.append(dict(product=product.describe(), count=count, gflop=product.flops / 1e9,
                     ms=1000 * seconds, gflops=product.flops / seconds / 1e9))
    progress(f'product {index + 1}/{len(found)}: {rows[-1]["product"]} x {count}: '
             f'{rows[-1]["ms"]:.2f} ms, {rows[-1]["gflops"]:.1f} GFLOP/s')
  rows.sort(key=lambda row: -row['ms'] * row['count'])
  serial_seconds = sum(row['ms'] * row['count'] for row in rows) / 1000
  return dict(rows=rows, serial_seconds=serial_seconds,
              seconds=serial_seconds / cores_in_parallel,
              flops=sum(product.flops * count for product, count in found.items()))


def peak_product(n: int = 4096) -> Product:
  """The float32 n x n x n product whose GFLOP/s is the machine's matmul peak in reports."""
  return Product('MatMul', ((n, n), (n, n)), 'float32',
                 (('transpose_a', False), ('transpose_b', False)))


def record(results: dict, entry: dict) -> dict:
  """`results` (key -> entry), `entry` replacing one of its machine, step and threads."""
  key = f'{entry["machine"]} | {entry["step"]} | intra-op threads {entry["intra_op_threads"]}'
  return {**results, key: entry}


def markdown(results: dict, top: int = 8) -> str:
  """The report: per machine and step, the step against its floor, then its costliest products."""
  lines = [
      '# The floor under a training step: its matrix products, each timed alone',
      '',
      '`python tools/benchmark_step_floor.py` (`teams_lab/matmul_floor.py`): the step of '
      '`tools/benchmark_pretrain.py` (Model Garden\'s `train_step` with the experiment\'s AdamW, '
      'one fixed batch), timed as a whole (median), and every matrix product in its traced graph '
      '(forward and gradients, the shapes, transposes and equations TensorFlow runs) timed alone '
      'with the same kernels. The floor is their summed time: the step with every other op free. '
      'With the default threads each product runs on every core, one after the other; with '
      '`--intra_op_threads=1` each runs on one core, and the floor is their sum over the cores: '
      'single-threaded products packed onto every core with none idle, which no schedule of '
      'these kernels beats. "Ceiling" is the step at the default threads over the floor: the '
      'most a rewrite that keeps these products and kernels can speed it up. Peak: a float32 '
      'n³ product (n = 4096 unless the command says), the same hour, every core.',
      '',
      '| machine | step | oneDNN | intra-op threads | step ms | floor ms | ceiling | '
      'products / analytic FLOPs | step GFLOP/s | floor GFLOP/s | peak GFLOP/s |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  default_step_ms = {(entry['machine'], entry['step']): entry['step_ms']
                     for entry in results.values() if not entry['intra_op_threads']}
  for entry in results.values():
    step_ms = default_step_ms.get((entry['machine'], entry['step']))
    ceiling = f'{step_ms / entry["floor_ms"]:.2f}x' if step_ms else 'n/a'
    lines.append(
        f'| {entry["machine"]} | {entry["step"]} | {entry["onednn"]} | '
        f'{entry["intra_op_threads"] or "default"} | {entry["step_ms"]:.0f} | '
        f'{entry["floor_ms"]:.0f} | {ceiling} | '
        f'{entry["product_flops"] / entry["analytic_flops"]:.1%} | '
        f'{entry["analytic_flops"] / entry["step_ms"] / 1e6:.1f} | '
        f'{entry["product_flops"] / entry["floor_ms"] / 1e6:.1f} | {entry["peak_gflops"]:.0f} |')
  for entry in results.values():
    serial_ms = sum(row['ms'] * row['count'] for row in entry['rows'])
    lines += ['', f'## {entry["step"]}, {entry["machine"]}, intra-op threads '
              f'{entry["intra_op_threads"] or "default"}', '',
              f'`{entry["command"]}` at commit {entry["git_commit"]}, {entry["date"]}, '
              f'TensorFlow {entry["tensorflow"]}, alone on the machine.', '',
              '| product | per step | ms each | GFLOP/s | share of the products\' time |',
              '|---|---|---|---|---|']
    for row in entry['rows'][:top]:
      lines.append(f'| {row["product"]} | {row["count"]} | {row["ms"]:.2f} | '
                   f'{row["gflops"]:.1f} | {row["ms"] * row["count"] / serial_ms:.1%} |')
    if len(entry['rows']) > top:
      rest = entry['rows'][top:]
      lines.append(f'| {len(rest)} more | {sum(row["count"] for row in rest)} | | | '
                   f'{sum(row["ms"] * row["count"] for row in rest) / serial_ms:.1%} |')
  return '\n'.join(lines) + '\n'
