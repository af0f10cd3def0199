"""teams_tf's packages form layers: every import inside the project goes to a lower layer.

A module may import its own package and any package of a lower layer, never one above it or a
sibling of its own layer, so the package graph has no cycle and each package can be read, tested
and replaced with only what lies below it.
"""

import ast
import os
import unittest

_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'teams_tf')

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
    ('serving', 'finetuning', 'benchmarking'),  # Export; GLUE data, metrics, sweeps; harnesses.
    ('train', 'cli'),  # Entry points: training, the user tools (console scripts).
)
_LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def _unit(module):
  """'teams_tf.ops.token_pairs' -> 'ops'; 'teams_tf.train' -> 'train'."""
  return module.split('.')[1]


def _imports():
  """Yields (importing module, imported teams_tf module, line) over the whole package."""
  for directory, _, files in os.walk(_ROOT):
    for name in sorted(files):
      if not name.endswith('.py'):
        continue
      path = os.path.join(directory, name)
      relative = os.path.relpath(path, os.path.dirname(_ROOT))[:-len('.py')]
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
          if target.startswith('teams_tf.'):
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
      if source != destination and _LEVEL[destination] >= _LEVEL[source]:
        upward.append(f'{module}:{line} imports {target} ({source} is not above {destination})')
    self.assertEqual(upward, [])

  def test_the_check_sees_imports(self):
    # Guards the test itself: the models import ops, layers and networks.
    pairs = {(_unit(module), _unit(target)) for module, target, _ in _imports()}
    self.assertLessEqual({('models', 'ops'), ('models', 'layers'), ('models', 'networks'),
                          ('tasks', 'models'), ('train', 'registry_imports')}, pairs)


if __name__ == '__main__':
  unittest.main()
