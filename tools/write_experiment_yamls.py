"""Writes `experiments/{pretraining,finetuning}/<name>.yaml`, mirrors of the registered experiments.

  python tools/write_experiment_yamls.py [--output_dir=experiments]

Run after changing a registered experiment; tests/registry/experiments_test.py fails while a
YAML differs from its registered config.
"""

import os

from absl import app
from absl import flags

from official.core import exp_factory
from official.modeling import hyperparams

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.registry import experiments

_OUTPUT_DIR = flags.DEFINE_string(
    'output_dir', os.path.join(os.path.dirname(__file__), '..', 'experiments'),
    'Directory for the YAML files.')


def main(_):
  for name in experiments.experiment_names(include_research=False):
    path = os.path.join(_OUTPUT_DIR.value, experiments.yaml_path(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    hyperparams.save_params_dict_to_yaml(exp_factory.get_exp_config(name), path)
    print(f'wrote {os.path.normpath(path)}')


if __name__ == '__main__':
  app.run(main)
