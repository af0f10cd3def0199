"""Writes `experiments/<name>.yaml`, the YAML mirror of every registered experiment.

  python tools/write_experiment_yamls.py [--output_dir=experiments]

Run after changing a registered experiment; tests/configs/experiments_test.py fails while a
YAML differs from its registered config.
"""

import os

from absl import app
from absl import flags

from official.core import exp_factory
from official.modeling import hyperparams

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.configs import experiments

_OUTPUT_DIR = flags.DEFINE_string(
    'output_dir', os.path.join(os.path.dirname(__file__), '..', 'experiments'),
    'Directory for the YAML files.')


def main(_):
  os.makedirs(_OUTPUT_DIR.value, exist_ok=True)
  for name in experiments.experiment_names():
    path = os.path.join(_OUTPUT_DIR.value, f'{name}.yaml')
    hyperparams.save_params_dict_to_yaml(exp_factory.get_exp_config(name), path)
    print(f'wrote {os.path.normpath(path)}')


if __name__ == '__main__':
  app.run(main)
