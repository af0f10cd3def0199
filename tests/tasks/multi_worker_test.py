"""`teams_demo` trains and resumes under MultiWorkerMirroredStrategy on 2 localhost workers.

Two `python -m teams_tf.train` processes, one per worker of a TF_CONFIG cluster on free loopback
ports, train 2 steps of a 2-layer `teams_demo` and checkpoint (global batch 4: one replica per
worker; each worker reads its own shard of the sample corpus and draws its own dropout masks);
then both are restarted on the same model_dir, as after a preemption, and train to step 4. Only
the chief checkpoints into `model_dir` (ckpt-2, ckpt-4); the non-chief saves to a new
`tempfile.mkdtemp()` in each run (Model Garden's
`OrbitExperimentRunner._maybe_build_checkpoint_manager`), found here by giving each worker its own
TMPDIR. Proves: every process exits 0; the restarted non-chief resumes at the chief's step 2
(weights, optimizer and step restored from the chief's checkpoint, input skipped to step 2)
instead of starting afresh at step 0, which crashes both workers' collectives; and after each run
the two workers' checkpoints hold the same value for every entry (weights, optimizer slots, step
counters, seed stream), which different data on each worker allows only if gradients were
all-reduced and, after the restart, both started from the same state. Tolerance: 1e-6 absolute on
floats (both sides apply the same all-reduced sums, so they are expected bitwise equal), exact on
everything else.
"""

import glob
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
_NUM_WORKERS = 2
_TIMEOUT_SECONDS = 300
_OVERRIDES = ','.join([
    'runtime.distribution_strategy=multi_worker_mirrored',
    'trainer.steps_per_loop=2', 'trainer.checkpoint_interval=2',
    'trainer.summary_interval=2', 'task.train_data.global_batch_size=4',
    'task.train_data.seq_length=32', 'task.train_data.max_predictions_per_seq=5',
    # 2 discriminator layers (and a 1-layer generator) halve the time spent tracing the step.
    'task.model.encoder.num_layers=2',
])


def _free_ports(count):
  """`count` distinct loopback ports that were free a moment ago."""
  sockets = [socket.socket() for _ in range(count)]
  try:
    for s in sockets:
      s.bind(('localhost', 0))
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def _read(path):
  with open(path, errors='replace') as f:
    return f.read()


def _train_cluster(model_dir, work_dir, train_steps):
  """Runs one `teams_tf.train` per worker to `train_steps`; returns (pid, TMPDIR, stderr) of each.

  Every worker gets its own TMPDIR and stderr file in `work_dir` (a new directory per run). Stops
  every worker as soon as one fails or the time runs out (a lone worker would wait for its peer's
  collectives forever) and then raises with both stderr tails.
  """
  ports = _free_ports(_NUM_WORKERS)
  cluster = {'worker': [f'localhost:{port}' for port in ports]}
  workers = []
  for index in range(_NUM_WORKERS):
    tmp_dir = os.path.join(work_dir, f'tmp{index}')
    os.makedirs(tmp_dir)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES='', TF_CPP_MIN_LOG_LEVEL='2', TMPDIR=tmp_dir,
               TF_CONFIG=json.dumps({'cluster': cluster,
                                     'task': {'type': 'worker', 'index': index}}))
    stderr_path = os.path.join(work_dir, f'stderr{index}')
    with open(stderr_path, 'w') as stderr:
      process = subprocess.Popen(
          [sys.executable, '-m', 'teams_tf.train', '--experiment=teams_demo', '--mode=train',
           f'--model_dir={model_dir}',
           f'--params_override={_OVERRIDES},trainer.train_steps={train_steps}'],
          cwd=_ROOT, env=env, stdout=stderr, stderr=stderr)  # Orbit's progress is on stdout.
    workers.append((process, tmp_dir, stderr_path))
  deadline = time.monotonic() + _TIMEOUT_SECONDS
  try:
    while time.monotonic() < deadline:
      codes = [process.poll() for process, _, _ in workers]
      if all(code == 0 for code in codes) or any(code for code in codes):
        break
      time.sleep(0.5)
  finally:
    for process, _, _ in workers:
      if process.poll() is None:
        process.kill()
      process.wait()
  codes = [process.returncode for process, _, _ in workers]
  if any(codes):
    raise AssertionError(
        f'worker exit codes {codes} (negative: killed after a peer failed or after '
        f'{_TIMEOUT_SECONDS}s)\n' + '\n'.join(
            f'--- worker {i} stderr tail ---\n{_read(path)[-3000:]}'
            for i, (_, _, path) in enumerate(workers)))
  return [(process.pid, tmp_dir, stderr_path) for process, tmp_dir, stderr_path in workers]


def _worker_checkpoint(tmp_dir):
  """The non-chief's checkpoint: the latest in the one mkdtemp() directory under its TMPDIR."""
  states = glob.glob(os.path.join(tmp_dir, '*', 'checkpoint'))
  if len(states) != 1:
    raise AssertionError(f'expected one checkpoint directory under {tmp_dir}, found {states}')
  return tf.train.latest_checkpoint(os.path.dirname(states[0]))


def _event_file_pid(path):
  """The writer's pid in `events.out.tfevents.<time>.<host>.<pid>.<n>.v2`."""
  return int(os.path.basename(path).split('.')[-3])


class MultiWorkerTrainTest(tf.test.TestCase):

  def assertSameCheckpoint(self, expected_prefix, prefix):
    """Every entry of both checkpoints equal: floats within 1e-6, everything else exactly."""
    expected = tf.train.load_checkpoint(expected_prefix)
    actual = tf.train.load_checkpoint(prefix)
    names = expected.get_variable_to_dtype_map()
    self.assertEqual(names, actual.get_variable_to_dtype_map())
    for name, dtype in names.items():
      if dtype.is_floating:
        self.assertAllClose(expected.get_tensor(name), actual.get_tensor(name), rtol=0,
                            atol=1e-6, msg=name)
      else:
        self.assertAllEqual(expected.get_tensor(name), actual.get_tensor(name), msg=name)

  def test_two_workers_train_resume_checkpoint_on_the_chief_and_end_with_identical_weights(self):
    work_dir = self.get_temp_dir()
    model_dir = os.path.join(work_dir, 'model')
    first = _train_cluster(model_dir, os.path.join(work_dir, 'first'), train_steps=2)
    # The restart: new processes (and TMPDIRs) on the same model_dir, as after a preemption.
    second = _train_cluster(model_dir, os.path.join(work_dir, 'second'), train_steps=4)
    chief_ckpt = {step: os.path.join(model_dir, f'ckpt-{step}') for step in (2, 4)}

    for _, _, log in first + second:  # A real 2-worker cluster, not a single-worker fallback.
      self.assertRegex(_read(log),
                       r'MultiWorkerMirroredStrategy with cluster_spec.*num_workers = 2')
    # Both restarted workers continue at the chief's step: the non-chief restored the chief's
    # checkpoint (Orbit's start-of-training line) and resumed its input there (resume.py).
    for _, _, log in second:
      self.assertIn('Resuming at step 2', _read(log))
      self.assertRegex(_read(log), r'train \| step: +2 \| training until step 4')

    # Only the chief's checkpoints are in model_dir, and the chief saved nothing elsewhere.
    state = tf.train.get_checkpoint_state(model_dir)
    self.assertEqual([chief_ckpt[2], chief_ckpt[4]], list(state.all_model_checkpoint_paths))
    self.assertEqual({'checkpoint', 'ckpt-2.index', 'ckpt-2.data-00000-of-00001',
                      'ckpt-4.index', 'ckpt-4.data-00000-of-00001', 'params.yaml',
                      'operative_config.train.gin', 'train'}, set(os.listdir(model_dir)))
    for _, chief_tmp, _ in (first[0], second[0]):
      self.assertEmpty(glob.glob(os.path.join(chief_tmp, '**', 'checkpoint'), recursive=True))
    # The non-chief's checkpoints: in each run one mkdtemp() directory with the last
    # (max_to_keep=1) one.
    worker_ckpt = {2: _worker_checkpoint(first[1][1]), 4: _worker_checkpoint(second[1][1])}
    self.assertEqual(['ckpt-2', 'ckpt-4'],
                     [os.path.basename(worker_ckpt[step]) for step in (2, 4)])
    # Training summaries come from the chief only (train.py: save_summary on the chief).
    event_pids = [_event_file_pid(path)
                  for path in glob.glob(os.path.join(model_dir, 'train', 'events.*'))]
    self.assertCountEqual([first[0][0], second[0][0]], event_pids)

    self.assertEqual(4, tf.train.load_checkpoint(chief_ckpt[4]).get_tensor(
        'global_step/.ATTRIBUTES/VARIABLE_VALUE'))
    for step in (2, 4):
      self.assertSameCheckpoint(chief_ckpt[step], worker_ckpt[step])

    # The resumed steps moved the weights, so the equality at step 4 is not that of two restored
    # step-2 states (the poolers get no gradient and stay put; optimizer/ holds
    # hyperparameters).
    earlier = tf.train.load_checkpoint(chief_ckpt[2])
    final = tf.train.load_checkpoint(chief_ckpt[4])
    names = final.get_variable_to_dtype_map()
    weights = [name for name in names if names[name].is_floating
               and '.OPTIMIZER_SLOT' not in name and not name.startswith('optimizer/')]
    moved = sum(not np.array_equal(earlier.get_tensor(name), final.get_tensor(name))
                for name in weights)
    self.assertGreater(moved, 0.9 * len(weights))

if __name__ == '__main__':
  tf.test.main()
