"""The step floor: which products it finds, how it counts and sums them, and its command."""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from teams_lab import matmul_floor

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def _entry(machine, threads, step_ms, floor_ms):
  return dict(machine=machine, step='ours bert mini fp32', onednn='on', intra_op_threads=threads,
              step_ms=step_ms, floor_ms=floor_ms, serial_ms=floor_ms, product_flops=9e9,
              analytic_flops=1e10, peak_gflops=140.0,
              command='python tools/benchmark_step_floor.py', git_commit='abc1234',
              tensorflow='2.20.0', date='2026-12-08T00:00:00+00:00',
              rows=[dict(product='MatMul [4, 8] x [8, 16]', count=3, gflop=1e-6, ms=floor_ms / 3,
                         gflops=1.0)])


class ProductTest(tf.test.TestCase):

  def test_flops_follow_transposes_batches_and_einsum_equations(self):
    def product(op_type, shapes, **attributes):
      return matmul_floor.Product(op_type, shapes, 'float32', tuple(attributes.items()))

    # [3, 5]^T [3, 7] is 5 x 7 outputs of 3 multiply-adds.
    self.assertEqual(2 * 5 * 7 * 3, product('MatMul', ((3, 5), (3, 7)), transpose_a=True,
                                            transpose_b=False).flops)
    # The batch dimensions broadcast (4 and 1): 4 products [6, 2] x [6, 2]^T, 6 x 6 outputs of 2.
    self.assertEqual(2 * 4 * 6 * 6 * 2, product('BatchMatMulV2', ((4, 6, 2), (1, 6, 2)),
                                                adj_x=False, adj_y=True).flops)
    self.assertEqual(2 * 2 * 3 * 4 * 5, product('Einsum', ((2, 3, 4), (4, 5)),
                                                equation='abc,cd->abd').flops)
    self.assertEqual('MatMul [3, 5] x [3, 7] (transpose_a=True)',
                     product('MatMul', ((3, 5), (3, 7)), transpose_a=True,
                             transpose_b=False).describe())

  def test_a_product_of_unknown_shape_is_refused_with_the_remedy(self):
    @tf.function(input_signature=[tf.TensorSpec([None, 4])])
    def step(x):
      return tf.matmul(x, tf.ones([4, 2]))

    with self.assertRaisesRegex(ValueError, 'unknown shape.*batch of fixed shape'):
      matmul_floor.products(step, tf.ones([3, 4]))

  def test_floor_sums_each_product_times_its_count_over_the_cores_side_by_side(self):
    small = matmul_floor.Product('MatMul', ((8, 8), (8, 8)), 'float32',
                                 (('transpose_a', False), ('transpose_b', False)))
    large = matmul_floor.Product('MatMul', ((64, 64), (64, 64)), 'float32',
                                 (('transpose_a', False), ('transpose_b', True)))
    result = matmul_floor.floor(collections.Counter({small: 3, large: 2}), repeats=3,
                                cores_in_parallel=2)
    serial = sum(row['ms'] * row['count'] for row in result['rows']) / 1000
    self.assertAllClose(serial, result['serial_seconds'])
    self.assertAllClose(serial / 2, result['seconds'])
    self.assertEqual(3 * small.flops + 2 * large.flops, result['flops'])
    costs = [row['ms'] * row['count'] for row in result['rows']]
    self.assertEqual(sorted(costs, reverse=True), costs)


class ReportTest(tf.test.TestCase):

  def test_ceiling_is_the_default_threads_step_over_each_floor(self):
    results = {}
    results = matmul_floor.record(results, _entry('AMD EPYC, 2 cores', 0, 500.0, 400.0))
    results = matmul_floor.record(results, _entry('AMD EPYC, 2 cores', 1, 900.0, 250.0))
    results = matmul_floor.record(results, _entry('Xeon, 2 cores', 1, 300.0, 100.0))
    # A rerun replaces its own entry only.
    results = matmul_floor.record(results, _entry('AMD EPYC, 2 cores', 0, 500.0, 400.0))
    self.assertLen(results, 3)
    text = matmul_floor.markdown(results)
    self.assertIn('| AMD EPYC, 2 cores | ours bert mini fp32 | on | default | 500 | 400 | 1.25x |'
                  ' 90.0% | 20.0 | 22.5 | 140 |', text)
    # The single-thread floor is read against the step at the default threads (500 ms).
    self.assertIn('| 1 | 900 | 250 | 2.00x |', text)
    self.assertIn('| Xeon, 2 cores | ours bert mini fp32 | on | 1 | 300 | 100 | n/a |', text)


class CommandTest(tf.test.TestCase):

  def test_command_times_a_tiny_step_and_keeps_other_entries(self):
    output = os.path.join(self.get_temp_dir(), 'floor')
    earlier = matmul_floor.record({}, _entry('Xeon, 2 cores', 0, 300.0, 100.0))
    with open(output + '.json', 'w') as f:
      json.dump(earlier, f)
    run = subprocess.run(
        [sys.executable, 'tools/benchmark_step_floor.py', '--size=tiny', '--batch_size=4',
         '--seq_length=32', '--max_predictions=5', '--steps=2', '--repeats=2',
         '--peak_size=256', f'--output={output}'],
        cwd=_ROOT, capture_output=True, text=True, check=False)
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    self.assertIn('timing its', run.stderr)
    with open(output + '.json') as f:
      results = json.load(f)
    self.assertLen(results, 2)
    entry = [e for e in results.values() if e['machine'] != 'Xeon, 2 cores'][0]
    # Forward and both gradients of every dense layer, the attention and the MLM head: the FLOP
    # count the benchmarks divide by is in the products the floor times, which hold besides
    # only the type embedding's one-hot product, the unused pooler and the output bias's column
    # in the output layer's weight gradient (0.1% more here).
    self.assertBetween(entry['product_flops'] / entry['analytic_flops'], 1.0, 1.005)
    self.assertGreater(entry['step_ms'], 0)
    self.assertAllClose(entry['serial_ms'], entry['floor_ms'])
    self.assertTrue(np.isfinite(entry['peak_gflops']))
    with open(output + '.md') as f:
      report = f.read()
    self.assertIn('Xeon, 2 cores', report)
    self.assertIn(entry['step'], report)
    self.assertIn('--size=tiny', report)


if __name__ == '__main__':
  tf.test.main()
