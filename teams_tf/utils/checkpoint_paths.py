"""Turning "a checkpoint prefix or a directory of checkpoints" into a checkpoint prefix.

Every command that reads a checkpoint (continued pretraining, fine-tuning sweeps, exporters and
scoring tools) accepts either form, and resolves it here so that they agree on what a directory
means (its latest checkpoint) and on what is not a checkpoint.
"""

import tensorflow as tf


def resolve_prefix(path: str) -> str:
  """The checkpoint prefix `path` names: the latest checkpoint of a directory, else `path` itself.

  Args:
    path: a checkpoint prefix (`<model_dir>/ckpt-N`, the name before `.index`) or a directory
      whose `checkpoint` state file names one (a training run's model_dir).

  Returns:
    The checkpoint prefix; its `.index` file exists.

  Raises:
    ValueError: `path` is a directory without a checkpoint, or neither a directory nor a prefix.
  """
  if tf.io.gfile.isdir(path):
    # None without a state file, and also when the file names a checkpoint whose files are gone.
    prefix = tf.train.latest_checkpoint(path)
    if not prefix:
      raise ValueError(
          f'Directory {path} holds no checkpoint (no `checkpoint` file naming an existing '
          'ckpt-N.index); pass the model_dir of a run that has saved a checkpoint, or a '
          'checkpoint prefix such as <model_dir>/ckpt-N.')
    return prefix
  if not tf.io.gfile.exists(path + '.index'):
    raise ValueError(
        f'{path} is neither a directory nor a checkpoint prefix (there is no {path}.index); pass '
        'a checkpoint prefix such as <model_dir>/ckpt-N, or the model_dir that holds it.')
  return path
