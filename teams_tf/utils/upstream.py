"""One-line errors for when the installed Model Garden no longer has what teams_tf adapts.

A few of Model Garden's internals are reached directly (a built encoder's embedding projection,
the dropout and layer-norm layers its blocks create). Each place checks the upstream shape first
and, where it no longer holds, fails with `changed(...)` instead of silently doing nothing.
"""

import importlib.metadata


def model_garden_version() -> str:
  """The installed tf-models-official version, or 'unknown'."""
  try:
    return importlib.metadata.version('tf-models-official')
  except importlib.metadata.PackageNotFoundError:
    return 'unknown'


def changed(what: str) -> RuntimeError:
  """A RuntimeError saying the installed tf-models-official no longer has `what`."""
  return RuntimeError(
      f'tf-models-official {model_garden_version()}: {what}. teams_tf is built for 2.20 '
      "(setup.py pins ~=2.20.0); install it: pip install 'tf-models-official~=2.20.0'.")
