"""teams_tf's packages form layers: every import inside the project goes to a lower layer.

A module may import its own package and any package of a lower layer, never one above it or a
sibling of its own layer, so the package graph has no cycle and each package can be read, tested
and replaced with only what lies below it. The research harness, `teams_lab`, sits above the whole
library: it imports teams_tf as any user does, and no teams_tf module imports it.
"""

import ast
import os
import unittest

_REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOT = os.path.join(_REPOSITORY, 'teams_tf')

# Lowest first. A new package or top-level module must be placed here.
LAYERS = (
    ('utils',),  # Atomic file writes, progress lines, checkpoint paths.
    ('ops',),  # In-graph helpers: replica-independent randomness, sampling, fused kernels.
    ('configs',),  # Encoder, model, optimizer and trainer config dataclasses.
    ('data',),  # Input pipelines: corpus text, records, masking, tokenization.
    ('preprocessing',),  # Offline: vocabularies, pretraining records.
    ('layers',),  # Keras layers: task heads, candidate sampler, relative attention.
    ('losses',),  # The papers' loss equations.
    ('networks',),  # Encoders, generator/discriminator sharing.
    ('models',),  # One pretrainer per objective.
    ('training',),  # Budgets, checkpoints, FLOPs, resume.
    ('tasks',),  # Model Garden Tasks.
    ('registry',),  # Registered experiments.
    ('registry_imports',),  # Everything that registers with Model Garden's factories.
    ('serving', 'finetuning'),  # Export; GLUE data, metrics, sweeps.
    ('train', 'cli'),  # Entry points: training, the user tools (console scripts).
)
_LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def _unit(module):
  """'teams_tf.ops.token_pairs' -> 'ops'; 'teams_tf.train' -> 'train'."""
  return module.split('.')[1]


def _imports(root=_ROOT, prefixes=('teams_tf.',)):
  """Yields (importing module, imported module, line) over the package at `root`, for the
  imported modules that start with one of `prefixes`."""
  for directory, _, files in os.walk(root):
    for name in sorted(files):
      if not name.endswith('.py'):
        continue
      path = os.path.join(directory, name)
      relative = os.path.relpath(path, os.path.dirname(root))[:-len('.py')]
      module = relative.replace(os.sep, '.')
      with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
      for node in ast.walk(tree):  # Function-level imports count too.
        if isinstance(node, ast.Import):
          targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
          targets = [f'{node.module}.{alias.name}' for alias in node.names]
        else:
          continue
        for target in targets:
          if target.startswith(prefixes):
            yield module, target, node.lineno


class PackageLayersTest(unittest.TestCase):

  def test_every_package_has_a_layer(self):
    units = {os.path.splitext(name)[0] for name in os.listdir(_ROOT)
             if name != '__init__.py' and not name.startswith(('.', '_'))
             and (name.endswith('.py') or os.path.exists(os.path.join(_ROOT, name, '__init__.py')))}
    self.assertEqual(sorted(units - set(_LEVEL)), [],
                     'place these packages in LAYERS of tests/package_layers_test.py')
    self.assertEqual(sorted(set(_LEVEL) - units), [], 'LAYERS names packages that do not exist')

  def test_imports_only_go_down(self):
    upward = []
    for module, target, line in _imports():
      source, destination = _unit(module), _unit(target)
      if source == '__init__':
        # teams_tf/__init__.py runs before every module (it sets what TensorFlow reads when it
        # loads): it may import the lowest layer only.
        if destination not in LAYERS[0]:
          upward.append(f'{module}:{line} imports {target} (the package init: {LAYERS[0]} only)')
      elif source != destination and _LEVEL[destination] >= _LEVEL[source]:
        upward.append(f'{module}:{line} imports {target} ({source} is not above {destination})')
    self.assertEqual(upward, [])

  def test_the_library_never_imports_the_research_harness(self):
    found = [f'{module}:{line} imports {target}'
             for module, target, line in _imports(prefixes=('teams_lab',))]
    self.assertEqual(found, [])
    # The harness does import the library (the check above would see such an import).
    lab = {target for _, target, _ in _imports(os.path.join(_REPOSITORY, 'teams_lab'))}
    self.assertIn('teams_tf.utils.atomic_files', lab)

  def test_the_check_sees_imports(self):
    # Guards the test itself: the models import ops, layers and networks.
    pairs = {(_unit(module), _unit(target)) for module, target, _ in _imports()}
    self.assertLessEqual({('models', 'ops'), ('models', 'layers'), ('models', 'networks'),
                          ('tasks', 'models'), ('train', 'registry_imports')}, pairs)


if __name__ == '__main__':
  unittest.main()
