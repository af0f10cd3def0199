"""tools/profile_step.py and the loss-curve comparison: what they read, group and compare."""

import collections
import os
import subprocess
import sys
import tempfile

import tensorflow as tf

from teams_lab import loss_curves_report
from teams_lab import pretrain_report
from teams_lab import xplane_kernels

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


class ProfileStepTest(tf.test.TestCase):

  def test_kernel_times_read_this_tensorflow_profile(self):
    logdir = tempfile.mkdtemp(dir=self.get_temp_dir())

    @tf.function
    def step(x):
      with tf.name_scope('model'):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, x, name='product')))

    x = tf.random.normal([256, 256])
    step(x)
    tf.profiler.experimental.start(logdir)
    for _ in range(3):
      step(x).numpy()
    tf.profiler.experimental.stop()
    xplane = [os.path.join(d, f) for d, _, files in os.walk(logdir) for f in files
              if f.endswith('.xplane.pb')]
    self.assertLen(xplane, 1)
    times = xplane_kernels.kernel_times(xplane[0])
    matmuls = {node: ps for (node, op_type), ps in times.items() if 'MatMul' in op_type}
    # The matmul is found under its node name, with a positive duration; the executor's and
    # eager runtime's own events are not kernels.
    self.assertGreater(matmuls.get('model/product', 0), 0)
    self.assertFalse([node for node, _ in times if node.startswith('ExecutorState')])

  def test_scopes_keep_forward_and_backward_apart(self):
    self.assertEqual('model/encoder', xplane_kernels.scope('model/encoder/layer_0/dense', 2))
    self.assertEqual('gradient_tape/model/encoder',
                     xplane_kernels.scope('gradient_tape/model/encoder/layer_0/dense', 2))
    times = collections.Counter({('model/a/x', 'MatMul'): 3e9, ('model/b/y', 'Mul'): 1e9})
    text = xplane_kernels.tables(times, steps=2, top=5, depth=2)
    self.assertIn('Kernel time summed over threads: 2 ms per step.', text)
    self.assertIn('| MatMul | 1.5 | 75.0% |', text)
    self.assertIn('| model/b | 0.5 | 25.0% |', text)

  def test_command_profiles_a_tiny_step(self):
    run = subprocess.run(
        [sys.executable, 'tools/profile_step.py', '--objective=bert', '--size=tiny',
         '--setting=fp32', '--steps=1', '--warmup=1', '--batch_size=4', '--seq_length=32',
         '--max_predictions=5', '--top=3', f'--logdir={self.get_temp_dir()}/profile'],
        cwd=_ROOT, capture_output=True, text=True, check=False)
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    self.assertIn('# Profile of ours bert tiny fp32 (B=4, T=32, P=5)', run.stdout)
    self.assertIn('| op type | ms per step | share |', run.stdout)
    self.assertIn('mlm_pretrainer', run.stdout)  # the model's own scopes are named


class CompareLossCurvesTest(tf.test.TestCase):

  def test_gap_between_implementations_against_gap_between_seeds(self):
    steps = 40
    base = [10.0 - 0.1 * i for i in range(steps)]
    runs = {}
    for seed, offset in ((0, 0.0), (1, 0.2)):
      runs[('ours', seed)] = {term: [v + offset for v in base]
                              for term in loss_curves_report.TERMS}
      # Model Garden: 0.05 above ours for every loss but MWS, 1.0 above ours for MWS.
      runs[('official', seed)] = {
          term: [v + offset + (1.0 if term == 'mws' else 0.05) for v in base]
          for term in loss_curves_report.TERMS}
    gaps = loss_curves_report.gaps(runs, [0, 1], window=10)
    self.assertAllClose(0.05, gaps['mlm']['implementations'])
    self.assertAllClose(0.2, gaps['mlm']['seeds_ours'])
    self.assertTrue(gaps['mlm']['within_noise'])
    self.assertAllClose(1.0, gaps['mws']['implementations'])
    self.assertFalse(gaps['mws']['within_noise'])
    self.assertEqual([4.5, 14.5], loss_curves_report.windows(list(range(20)), 10))


class ScriptBoundNoteTest(tf.test.TestCase):

  def test_note_states_the_flop_bound_of_the_script_ratio(self):
    results = [
        dict(implementation='ours', objective=objective, size='small', setting='bf16',
             status='ok', finite=True, examples_per_second=eps, flops_per_step=flops,
             gflops_per_second=rate)
        for objective, eps, flops, rate in (('script', 6.0, 600e9, 112.5),
                                            ('electra', 15.0, 300e9, 140.6))]
    note = [line for line in pretrain_report.notes(results)
            if line.startswith('SCRIPT vs ELECTRA, small')]
    self.assertLen(note, 1)
    # ELECTRA does half SCRIPT's FLOPs: equal efficiency gives 0.50x; 0.725x needs 1.45x.
    self.assertIn('SCRIPT runs 0.50x ELECTRA\'s steps/s', note[0])
    self.assertIn('needs SCRIPT at 1.45x ELECTRA\'s GFLOP/s', note[0])
    self.assertIn('112 vs 141, 0.80x', note[0])


if __name__ == '__main__':
  tf.test.main()
