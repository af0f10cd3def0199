"""Training checkpoints a run can resume from: verified before use, corrupted ones set aside.

TensorFlow already writes a checkpoint atomically with respect to the `checkpoint` state file:
`tf.train.CheckpointManager.save` writes the data and index files first and only then rewrites the
state file (itself through a temporary file and a rename), so a process killed during a save leaves
the state file naming the previous, complete checkpoint. What it does not catch is a checkpoint
that was complete once and was damaged later (a truncated copy, a disk error): restoring it fails
deep inside TensorFlow, or, worse, on the first read of one variable. `latest_restorable` reads
every tensor of the newest checkpoint (the bundle format checks each tensor's CRC32C), moves a
damaged one aside into `corrupted_checkpoints/` and falls back to the previous one.
"""

import os
from typing import Optional

from absl import logging
from google.protobuf import text_format
import tensorflow as tf

from teams_tf.utils import atomic_files

CORRUPTED_DIR = 'corrupted_checkpoints'
_GLOBAL_STEP_KEY = 'global_step/.ATTRIBUTES/VARIABLE_VALUE'


def checkpoint_error(prefix: str) -> Optional[str]:
  """Reads every tensor of checkpoint `prefix`; returns why it cannot be restored, or None."""
  try:
    reader = tf.train.load_checkpoint(prefix)
    for key in reader.get_variable_to_shape_map():
      reader.get_tensor(key)
  # The reader maps a short read to IndexError and other bundle errors to TensorFlow's types.
  except (tf.errors.OpError, ValueError, IndexError, RuntimeError) as e:
    return ' '.join(str(e).split())[:300]
  return None


def _set_aside(model_dir: str, prefix: str) -> str:
  """Moves every file of checkpoint `prefix` into `model_dir/corrupted_checkpoints/`."""
  target_dir = os.path.join(model_dir, CORRUPTED_DIR)
  tf.io.gfile.makedirs(target_dir)
  for path in tf.io.gfile.glob(prefix + '.*'):
    tf.io.gfile.rename(path, os.path.join(target_dir, os.path.basename(path)), overwrite=True)
  return target_dir


def _drop_from_state(model_dir: str, state, prefix: str) -> None:
  """Rewrites the `checkpoint` state file (atomically) without checkpoint `prefix`."""
  paths = list(state.all_model_checkpoint_paths)
  timestamps = list(state.all_model_checkpoint_timestamps)
  index = paths.index(prefix)
  del state.all_model_checkpoint_paths[index]
  if len(timestamps) == len(paths):
    del state.all_model_checkpoint_timestamps[index]
  state_file = os.path.join(model_dir, 'checkpoint')
  if state.all_model_checkpoint_paths:
    state.model_checkpoint_path = state.all_model_checkpoint_paths[-1]
    atomic_files.write_text(state_file, text_format.MessageToString(state))
  else:
    tf.io.gfile.remove(state_file)


def latest_restorable(model_dir: str, set_aside: bool = True) -> Optional[str]:
  """The newest checkpoint in `model_dir` that restores, after setting damaged newer ones aside.

  With `set_aside` (the chief of a training run), every damaged checkpoint newer than the returned
  one is moved into `model_dir/corrupted_checkpoints/` (kept, not deleted) and dropped from the
  `checkpoint` state file, so Model Garden's `CheckpointManager` resumes from the returned one.
  Without it (other workers, evaluation), nothing is changed: the same checkpoint is returned.
  Call it before the trainer is built.

  Returns:
    The checkpoint prefix, or None when `model_dir` holds no checkpoint (a fresh run).

  Raises:
    RuntimeError: checkpoints exist but none restores (all were set aside); the message says
      where they are and that rerunning starts from scratch.
  """
  state = tf.train.get_checkpoint_state(model_dir)
  if state is None or not state.model_checkpoint_path:
    return None
  if state.model_checkpoint_path not in state.all_model_checkpoint_paths:
    state.all_model_checkpoint_paths.append(state.model_checkpoint_path)
  while state.all_model_checkpoint_paths:
    prefix = state.all_model_checkpoint_paths[-1]
    error = checkpoint_error(prefix)
    if error is None:
      return prefix
    if set_aside:
      done = f'moved its files to {_set_aside(model_dir, prefix)}'
      _drop_from_state(model_dir, state, prefix)
    else:
      done = 'left in place for the chief to set aside'
      del state.all_model_checkpoint_paths[-1]
    fallback = (state.all_model_checkpoint_paths[-1] if state.all_model_checkpoint_paths
                else 'none')
    logging.error('Checkpoint %s cannot be restored (%s); %s; falling back to %s.', prefix, error,
                  done, fallback)
  where = (f'; the damaged ones are in {os.path.join(model_dir, CORRUPTED_DIR)}. Rerun to start '
           'this run from scratch, or pass a new --model_dir') if set_aside else ''
  raise RuntimeError(f'no checkpoint in {model_dir} can be restored{where}.')


def global_step(prefix: Optional[str]) -> int:
  """The training step saved in checkpoint `prefix` (0 for None: a fresh run)."""
  if prefix is None:
    return 0
  return int(tf.train.load_checkpoint(prefix).get_tensor(_GLOBAL_STEP_KEY))
