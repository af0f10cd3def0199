"""Input file lists and per-pipeline sharding shared by every pretraining input format."""

from typing import Callable, Optional

import tensorflow as tf

from teams_tf.data import embedded


def _split_patterns(input_path) -> list[str]:
  """Returns the file patterns named by a comma-separated string or a list of them."""
  if isinstance(input_path, str):
    entries = [input_path]
  elif isinstance(input_path, (list, tuple)) and all(isinstance(p, str) for p in input_path):
    entries = list(input_path)
  else:
    raise ValueError(f'input_path={input_path!r} must be a string of comma-separated files/globs '
                     'or a list of them; named (dict) inputs are not supported.')
  patterns = [p.strip() for entry in entries for p in entry.split(',') if p.strip()]
  if not patterns:
    raise ValueError("input_path is empty; set it to files or globs, e.g. 'sample:train' or "
                     "'/data/wiki/*.txt'.")
  return patterns


def list_input_files(input_path) -> list[str]:
  """Expands `input_path` into files, in pattern order and sorted within each pattern.

  Raises:
    ValueError: a pattern matches no file (the message names the pattern).
  """
  files = []
  for pattern in _split_patterns(input_path):
    resolved = embedded.resolve_path(pattern)
    matches = sorted(tf.io.gfile.glob(resolved))
    if not matches:
      where = '' if resolved == pattern else f' (resolved to {resolved!r})'
      raise ValueError(f'input_path pattern {pattern!r}{where} matches no file; check the path, or '
                       "use 'sample:train' / 'sample:valid' for the embedded corpus.")
    files.extend(matches)
  return files


def read_sharded(files: list[str],
                 read: Callable[[tf.data.Dataset], tf.data.Dataset],
                 input_context: Optional[tf.distribute.InputContext],
                 sharding: bool = True) -> tf.data.Dataset:
  """Reads this input pipeline's share of `files`.

  Args:
    files: the input files, in a fixed order.
    read: maps a dataset of file names to a dataset of their elements.
    input_context: the distribution input context, or None for a single pipeline.
    sharding: whether to split the input among pipelines at all.

  Returns:
    The elements of this pipeline's share: whole files when there are at least as many files as
    pipelines (so no pipeline reads bytes it discards), otherwise every num_pipelines-th element.
  """
  sharded = input_context is not None and sharding
  num_pipelines = input_context.num_input_pipelines if sharded else 1
  pipeline_id = input_context.input_pipeline_id if sharded else 0
  file_names = tf.data.Dataset.from_tensor_slices(files)
  shard_files = len(files) >= num_pipelines
  if num_pipelines > 1 and shard_files:
    file_names = file_names.shard(num_pipelines, pipeline_id)
  elements = read(file_names)
  if num_pipelines > 1 and not shard_files:
    elements = elements.shard(num_pipelines, pipeline_id)
  return elements
