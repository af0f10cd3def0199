"""Released pretraining runs: a run's weights, small enough to commit, and its model_dir rebuilt.

A release is a directory:
  params.yaml   the run's own.
  vocab.txt     its vocabulary.
  weights.npz   every weight of the pretrainer (no optimizer state), `weight_0000`, ... in
                `pretrainer.weights` order, stored as `dtype` (float16 by default: a mini run is
                about 4 MB instead of 8; the rounding is at most 2^-11 of a value), deflated
                (8% smaller on float16 values).
  release.json  step, training FLOPs, dtype, each weight's name and shape, the sha256 of
                weights.npz and vocab.txt, and what the packer was told about the run.
`unpack` checks both hashes, rebuilds the pretrainer from params.yaml, loads the stored values and
writes a model_dir (params.yaml, vocab.txt, `ckpt-<step>`) that every tool reads
as it reads a training run: scoring, probing, fine-tuning (`task.init_checkpoint`) and export.
Every number computed from a release is computed from the stored (rounded) values.
"""

import json
import os
import re
from typing import Optional

import numpy as np
import tensorflow as tf

from official.modeling import hyperparams

from teams_tf.training import checkpoints
from teams_tf.training import run_settings
from teams_tf.utils import atomic_files
from teams_tf.utils import checkpoint_paths
from teams_tf.utils import file_hashes

RELEASE_FILE = 'release.json'
_WEIGHTS = 'weights.npz'
_VOCAB = 'vocab.txt'
_PARAMS = 'params.yaml'
_DTYPES = ('float16', 'float32')
# Written last into an unpacked model_dir: without it the directory is an interrupted unpack.
_UNPACKED = 'unpacked.json'
_VOCAB_KEYS = ('train_data', 'validation_data')


def is_release(path: str) -> bool:
  return tf.io.gfile.exists(os.path.join(path, RELEASE_FILE))


def read_release(release_dir: str) -> dict:
  with tf.io.gfile.GFile(os.path.join(release_dir, RELEASE_FILE)) as f:
    return json.load(f)


def _pretrainer(params: dict, params_path: str):
  model_config, build = run_settings.pretraining_model(
      params.get('task', {}).get('model') or {}, params_path)
  return run_settings.built_pretrainer(build, model_config)


def _weights(pretrainer) -> list:
  """The pretrainer's variables, each once (the generator and discriminator share some)."""
  seen, weights = set(), []
  for weight in pretrainer.weights:
    if id(weight) not in seen:
      seen.add(id(weight))
      weights.append(weight)
  return weights


def _stored(value: np.ndarray, dtype: str) -> np.ndarray:
  # Counters (a sampling stream's position) are not rounded.
  return value.astype(dtype) if np.issubdtype(value.dtype, np.floating) else value


def pack(model_dir: str, release_dir: str, train_flops: float,
         checkpoint_path: Optional[str] = None, dtype: str = 'float16',
         about: Optional[dict] = None) -> dict:
  """Writes the release of a pretraining run's checkpoint to `release_dir`; returns release.json.

  Args:
    model_dir: the pretraining model_dir (params.yaml, checkpoints).
    release_dir: created; must not hold a release already.
    train_flops: training FLOPs up to the checkpoint (`experiment_flops.step_flops` x step).
    checkpoint_path: default the latest checkpoint of `model_dir`.
    dtype: 'float16' or 'float32', how the values are stored.
    about: JSON-able facts about the run kept in release.json (experiment, seed, metrics, ...).

  Raises:
    ValueError: an unknown dtype, a release already there, a run that is no pretraining run or a
      checkpoint that does not hold its pretrainer (`run_settings.restore_pretrainer`).
  """
  if dtype not in _DTYPES:
    raise ValueError(f'dtype={dtype!r}; use one of {", ".join(_DTYPES)}.')
  if is_release(release_dir):
    raise ValueError(f'{release_dir} already holds a release; remove it to pack again.')
  settings = run_settings.RunSettings(model_dir)
  params_path = os.path.join(model_dir, _PARAMS)
  prefix = checkpoint_paths.resolve_prefix(checkpoint_path or model_dir)
  pretrainer = _pretrainer(settings.params, params_path)
  run_settings.restore_pretrainer(pretrainer, prefix)
  weights = _weights(pretrainer)
  values = {f'weight_{i:04d}': _stored(w.numpy(), dtype) for i, w in enumerate(weights)}
  tf.io.gfile.makedirs(release_dir)
  vocab_file = settings.get('vocab_file', None, 'task.train_data.vocab_file')
  tf.io.gfile.copy(vocab_file, os.path.join(release_dir, _VOCAB), overwrite=True)
  tf.io.gfile.copy(params_path, os.path.join(release_dir, _PARAMS), overwrite=True)
  weights_path = os.path.join(release_dir, _WEIGHTS)
  # A local file: the zip format seeks, which GFile's writer does not.
  with open(weights_path + '.incomplete', 'wb') as f:
    np.savez_compressed(f, **values)
  os.replace(weights_path + '.incomplete', weights_path)
  release = dict(
      step=checkpoints.global_step(prefix), train_flops=float(train_flops), dtype=dtype,
      num_parameters=int(sum(v.size for v in values.values())),
      weights=[[w.name, list(w.shape)] for w in weights],
      sha256={_WEIGHTS: file_hashes.sha256(weights_path),
              _VOCAB: file_hashes.sha256(os.path.join(release_dir, _VOCAB))},
      source_checkpoint=prefix, about=about or {})
  atomic_files.write_json(os.path.join(release_dir, RELEASE_FILE), release)
  return release


def _check_hashes(release_dir: str, release: dict) -> None:
  for name, expected in release['sha256'].items():
    path = os.path.join(release_dir, name)
    if not tf.io.gfile.exists(path):
      raise ValueError(f'{path} is missing: the release {release_dir} is incomplete.')
    found = file_hashes.sha256(path)
    if found != expected:
      raise ValueError(f'{path} has sha256 {found[:12]}..., but {RELEASE_FILE} says '
                       f'{expected[:12]}...: the file was changed or damaged (git checkout it '
                       'again; a Git LFS pointer is not the file).')


def _structure(weights: list) -> list:
  """[name, shape] pairs with the `_<n>` suffixes Keras appends to names already in use.

  Those depend on the models built earlier in the process (the second BertEncoderV2 of a process
  is `bert_encoder_v2_1`), not on the release.
  """
  return [[re.sub(r'_\d+(?=[/:])', '', name), shape] for name, shape in weights]


def unpack(release_dir: str, model_dir: str) -> str:
  """Rebuilds a release's model_dir (params.yaml, vocab.txt, ckpt-<step>); returns its prefix.

  Reuses `model_dir` when an earlier unpack of the same weights completed there.

  Raises:
    ValueError: a file whose sha256 differs from release.json, weights that are not those of the
      pretrainer params.yaml builds (names or shapes), or a checkpoint at another step.
  """
  release = read_release(release_dir)
  done = os.path.join(model_dir, _UNPACKED)
  if tf.io.gfile.exists(done):
    with tf.io.gfile.GFile(done) as f:
      if json.load(f).get('sha256') == release['sha256']:
        return checkpoint_paths.resolve_prefix(model_dir)
  _check_hashes(release_dir, release)
  params = hyperparams.read_yaml_to_params_dict(os.path.join(release_dir, _PARAMS)).as_dict()
  # The model_dir keeps its own vocabulary: a cached unpack outlives the release directory it came
  # from (a moved clone, a deleted temporary copy).
  vocab_file = os.path.abspath(os.path.join(model_dir, _VOCAB))
  for key in _VOCAB_KEYS:
    if isinstance(params['task'].get(key), dict):
      params['task'][key]['vocab_file'] = vocab_file
  pretrainer = _pretrainer(params, os.path.join(release_dir, _PARAMS))
  weights = _weights(pretrainer)
  found = [[w.name, list(w.shape)] for w in weights]
  if _structure(found) != _structure(release['weights']):
    first = next((i for i, (a, b) in enumerate(zip(found, release['weights'])) if a != b),
                 min(len(found), len(release['weights'])))
    raise ValueError(
        f'{release_dir} holds {len(release["weights"])} weights, the pretrainer its params.yaml '
        f'builds has {len(found)}; the first difference is at weight {first}: '
        f'{release["weights"][first:first + 1]} against {found[first:first + 1]}. It was packed '
        'by another version of teams_tf (see its source_checkpoint and about).')
  with np.load(os.path.join(release_dir, _WEIGHTS)) as values:
    for i, weight in enumerate(weights):
      weight.assign(values[f'weight_{i:04d}'].astype(weight.dtype.as_numpy_dtype))
  if tf.io.gfile.exists(model_dir):
    tf.io.gfile.rmtree(model_dir)  # An interrupted unpack, or one of other weights.
  tf.io.gfile.makedirs(model_dir)
  tf.io.gfile.copy(os.path.join(release_dir, _VOCAB), vocab_file)
  hyperparams.save_params_dict_to_yaml(hyperparams.ParamsDict(params),
                                       os.path.join(model_dir, _PARAMS))
  # The layout of a training checkpoint, which every reader of a model_dir expects.
  checkpoint = tf.train.Checkpoint(model=pretrainer,
                                   global_step=tf.Variable(release['step'], dtype=tf.int64),
                                   **pretrainer.checkpoint_items)
  prefix = tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=1).save(
      checkpoint_number=release['step'])
  if checkpoints.global_step(prefix) != release['step']:
    raise ValueError(f'{prefix} is at step {checkpoints.global_step(prefix)}, not the release\'s '
                     f'{release["step"]}.')
  atomic_files.write_json(done, dict(release_dir=os.path.abspath(release_dir),
                                     sha256=release['sha256'], step=release['step']))
  return prefix


def cache_dir(release_dir: str) -> str:
  """Where `resolve_model_dir` unpacks a release: `$TEAMS_TF_CACHE` (default ~/.cache/teams_tf)
  /releases/<release name>-<first 12 hex digits of its weights' sha256>."""
  root = os.environ.get('TEAMS_TF_CACHE') or os.path.join(os.path.expanduser('~'), '.cache',
                                                          'teams_tf')
  digest = read_release(release_dir)['sha256'][_WEIGHTS][:12]
  name = os.path.basename(os.path.normpath(os.path.abspath(release_dir)))
  return os.path.join(root, 'releases', f'{name}-{digest}')


def resolve_model_dir(path: str) -> str:
  """`path` itself, or for a release its unpacked model_dir (`cache_dir`, checked by `unpack`)."""
  if not is_release(path):
    return path
  model_dir = cache_dir(path)
  unpack(path, model_dir)
  return model_dir
