"""Runs a command whose absl flags live in a package module, with those flags in its --help.

Every command also drops Model Garden's config dumps from its log (`log_filters`).

absl's `--help` lists the key flags of the module named by `sys.argv[0]`: a console script
(`teams-export`) or a `tools/*.py` wrapper, neither of which defines the flags it runs with.
"""

import sys
from typing import Callable, Sequence

from absl import app
from absl import flags

from teams_tf.utils import log_filters


def run(main: Callable, module, required: Sequence[str] = ()) -> None:
  """Declares `module`'s key flags as the command's, marks `required` ones, runs `main` with
  the quiet log.

  Args:
    main: the absl main function, given the remaining argv.
    module: the module (or its name) that defines the flags and whose docstring is the usage,
      e.g. `sys.modules[__name__]`.
    required: names of the flags the command cannot run without.
  """
  if isinstance(module, str):
    module = sys.modules[module]
  for flag in flags.FLAGS.get_key_flags_for_module(module):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  # absl's --help starts with the main module's docstring: the command's usage, not the
  # wrapper's.
  sys.modules['__main__'].__doc__ = module.__doc__
  if required:
    flags.mark_flags_as_required(list(required))
  log_filters.install()
  app.run(main)
