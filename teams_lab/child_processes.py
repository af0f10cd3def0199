"""Child processes that import teams_lab, which is not installed, find it where this one did."""

import os

# The clone's root, the folder that holds teams_lab/.
CLONE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def environment(**variables: str) -> dict[str, str]:
  """This process's environment with the clone first on PYTHONPATH, plus `variables`."""
  path = os.pathsep.join(filter(None, [CLONE, os.environ.get('PYTHONPATH')]))
  return dict(os.environ, PYTHONPATH=path, **variables)
