"""Every user tool is an installed console script, and `tools/` holds thin wrappers of them."""

import ast
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess

import tensorflow as tf

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
_CLI = os.path.join(_ROOT, 'teams_tf', 'cli')


def _console_scripts():
  """{script name: 'module:function'} of the installed teams_tf distribution."""
  return {entry.name: entry.value
          for entry in importlib.metadata.distribution('teams_tf').entry_points
          if entry.group == 'console_scripts'}


def _cli_modules():
  return sorted(name[:-len('.py')] for name in os.listdir(_CLI)
                if name.endswith('.py') and name != '__init__.py')


class ConsoleScriptsTest(tf.test.TestCase):

  def test_every_cli_module_is_a_console_script_that_resolves(self):
    scripts = _console_scripts()
    targets = {value.split(':')[0] for value in scripts.values()}
    self.assertEqual([], [name for name in _cli_modules() if f'teams_tf.cli.{name}' not in targets],
                     'teams_tf/cli modules without a console script in setup.py (reinstall?)')
    self.assertIn('teams_tf.train', targets)
    # Read, not imported: each module defines its flags on import, and some share names.
    for name, value in scripts.items():
      module, function = value.split(':')
      with open(importlib.util.find_spec(module).origin, encoding='utf-8') as f:
        tree = ast.parse(f.read())
      self.assertIn(function, [node.name for node in tree.body
                               if isinstance(node, ast.FunctionDef)], name)

  def test_tools_wrap_the_cli_modules(self):
    for name in _cli_modules():
      with open(os.path.join(_ROOT, 'tools', f'{name}.py'), encoding='utf-8') as f:
        wrapper = f.read()
      self.assertIn(f'from teams_tf.cli import {name}\n', wrapper, name)
      self.assertIn(f'  {name}.run()\n', wrapper, name)

  def test_console_scripts_run_outside_the_repository_and_list_their_flags(self):
    train_flags = ('experiment', 'mode', 'model_dir', 'config_file', 'params_override',
                   'gin_file', 'gin_params', 'tpu', 'seed', 'list_experiments')
    for script, flags in (('teams-train', train_flags), ('teams-export', ('kind',))):
      path = shutil.which(script)
      self.assertIsNotNone(path, f'{script} is not on PATH: pip install -e . installs it')
      result = subprocess.run([path, '--help'], cwd=self.get_temp_dir(), capture_output=True,
                              text=True, timeout=300, check=False)
      for flag in flags:
        self.assertRegex(result.stdout, rf'  --(\[no\])?{flag}:', result.stderr[-2000:])

if __name__ == '__main__':
  tf.test.main()
