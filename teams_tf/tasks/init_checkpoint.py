"""Continue pretraining from an existing pretraining checkpoint (`task.init_checkpoint`).

A new run (no checkpoint in its model_dir yet) restores parts of its pretrainer before step 1;
the optimizer, step and sampling seeds start fresh. `task.init_checkpoint_modules` names the parts:
  'encoder': the kept encoder (checkpoint entry `encoder`: embeddings and Transformer layers), which
    every objective saves in the same layout, so a BERT, ELECTRA, TACO, ... checkpoint of the same
    encoder architecture starts a TEAMS run (and so on);
  'encoder,generator': also the generator's own layers and MLM head (TEAMS, ELECTRA, MWS, COCO-LM);
  'all': every weight of the pretrainer (heads included), from a run of the same experiment.
Before restoring, the checkpoint's object graph is matched against the model's: a variable the
checkpoint lacks, or holds with another shape, is named in the error instead of surfacing as
TensorFlow's assertion over object ids (or, for shapes, deep inside the restore).
"""

from typing import Dict, List, Tuple

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from teams_tf.ops import replica_random
from teams_tf.utils import checkpoint_paths

MODULES = ('encoder', 'encoder,generator', 'all')


class InitCheckpointError(ValueError):
  """`task.init_checkpoint` cannot start this model; the message names what does not fit."""
_OBJECT_GRAPH_KEY = '_CHECKPOINTABLE_OBJECT_GRAPH'
_SHOWN = 5


def restore_targets(model, modules: str) -> Dict[str, tf.Module]:
  """The checkpoint entries `modules` restores, as `tf.train.Checkpoint` keyword arguments."""
  if modules not in MODULES:
    raise InitCheckpointError(
        f'task.init_checkpoint_modules={modules!r} is not one of {MODULES}.')
  if modules == 'all':
    return dict(model=model)
  targets = dict(encoder=model.checkpoint_items['encoder'])
  if modules == 'encoder,generator':
    if getattr(model, 'generator_network', None) is None:
      raise InitCheckpointError(
          f'task.init_checkpoint_modules={modules!r} but {type(model).__name__} has no generator; '
          "use 'encoder'.")
    targets['model'] = tf.train.Checkpoint(generator_network=model.generator_network,
                                           masked_lm=model.masked_lm)
  return targets


def _object_graph(reader) -> trackable_object_graph_pb2.TrackableObjectGraph:
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH_KEY))
  return graph


def mismatches(targets: Dict[str, tf.Module], prefix: str) -> Tuple[List[str], List[str]]:
  """Variables of `targets` absent from checkpoint `prefix`, and those with another shape.

  Matching follows the checkpoint's object graph by attribute name from the root, as restoring
  does. Sampling-stream state (`SeedStream`) is not compared: a new run starts its own stream.

  Returns:
    (missing paths, ['path: model shape vs checkpoint shape', ...]).
  """
  reader = tf.train.load_checkpoint(prefix)
  graph = _object_graph(reader)
  shapes = reader.get_variable_to_shape_map()
  missing, mismatched, seen = [], [], set()

  def walk(obj, node_id, path):
    if id(obj) in seen or isinstance(obj, replica_random.SeedStream):
      return
    seen.add(id(obj))
    node = graph.nodes[node_id] if node_id is not None else None
    if isinstance(obj, tf.Variable):
      keys = [a.checkpoint_key for a in node.attributes
              if a.name == 'VARIABLE_VALUE'] if node else []
      if not keys:
        missing.append(path)
      elif list(obj.shape) != list(shapes[keys[0]]):
        mismatched.append(f'{path}: model {list(obj.shape)} vs checkpoint {shapes[keys[0]]}')
      return
    children = {child.local_name: child.node_id for child in node.children} if node else {}
    for name, child in tf.train.TrackableView(obj).children(obj).items():
      walk(child, children.get(name), f'{path}/{name}' if path else name)

  root = {child.local_name: child.node_id for child in graph.nodes[0].children}
  for name, target in targets.items():
    walk(target, root.get(name), name)
  return missing, mismatched


def _listed(items):
  more = f', and {len(items) - _SHOWN} more' if len(items) > _SHOWN else ''
  return '; '.join(items[:_SHOWN]) + more


def restore(model, checkpoint: str, modules: str) -> str:
  """Restores `modules` of `model` from `checkpoint` (a checkpoint prefix or its directory).

  Returns:
    The checkpoint prefix restored from.

  Raises:
    InitCheckpointError: no checkpoint at `checkpoint`, an unknown `modules`, or variables missing
      from the checkpoint or of other shapes (the first few named, with the count).
  """
  try:
    prefix = checkpoint_paths.resolve_prefix(checkpoint)
  except ValueError as e:
    raise InitCheckpointError(
        f'task.init_checkpoint={checkpoint!r} names no checkpoint; give a pretraining run\'s '
        'model_dir or one of its ckpt-N prefixes.') from e
  targets = restore_targets(model, modules)
  missing, mismatched = mismatches(targets, prefix)
  problems = []
  if missing:
    problems.append(f'{len(missing)} variables missing from the checkpoint ({_listed(missing)})')
  if mismatched:
    problems.append(f'{len(mismatched)} with other shapes ({_listed(mismatched)})')
  if problems:
    raise InitCheckpointError(
        f'task.init_checkpoint={prefix} does not fit this model with '
        f'task.init_checkpoint_modules={modules!r}: {"; ".join(problems)}. Use a checkpoint of the '
        "same architecture, or restore less (init_checkpoint_modules='encoder').")
  tf.train.Checkpoint(**targets).read(prefix).expect_partial()
  return prefix
