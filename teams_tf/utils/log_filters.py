"""Log lines a user of the command-line tools never needs among the ones they read.

Model Garden logs each built transformer layer's and encoder's whole config (a few hundred
characters apiece, one per layer, every time a model is built), the checkpoint saver its sharding
time on every save, and Orbit's controller a log copy of every progress and metrics block it also
prints. The training log is read on a terminal; these are dropped from it.
"""

import logging as logging_lib
import os

from absl import logging

# (file the record comes from, start of its message); None: every message of that file.
_DROPPED = (
    (os.path.join('orbit', 'controller.py'), None),  # Printed to stdout as well.
    ('transformer_scaffold.py', None),  # '<Layer> configs: {...}', per layer.
    ('encoder_scaffold.py', 'EncoderScaffold configs:'),
    ('functional_saver.py', 'Sharding callback duration'),
    ('checkpoint_management.py', 'Customized initialization is done through the passed'),
)


class QuietLogs(logging_lib.Filter):
  """Drops the records of `_DROPPED`."""

  def filter(self, record):
    return not any(record.pathname.endswith(path) and (
        prefix is None or record.getMessage().startswith(prefix)) for path, prefix in _DROPPED)


def install() -> None:
  """Adds `QuietLogs` to absl's logger (once)."""
  logger = logging.get_absl_logger()
  if not any(isinstance(f, QuietLogs) for f in logger.filters):
    logger.addFilter(QuietLogs())
