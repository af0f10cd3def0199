"""The command line a report names: its tool and the flags that decide what the report holds."""

import os

from absl import flags


def tool_command(tool_file: str, flag_holders, always=()) -> str:
  """`python tools/<tool>.py --flag=value ...`, as a report's preamble names it.

  Args:
    tool_file: the tool's `__file__`; the folder above the tool's folder (the repository) is
      what paths are written relative to, so the line works from the repository's root.
    flag_holders: absl FlagHolders in the order to write them; each is written when it
      differs from its default. A flag whose default is an absolute path holds a path: it
      differs when it names another place, and is written relative to the repository (or
      absolute, outside it). A list is written comma-separated.
    always: those of `flag_holders` written even at their default (e.g. the budget).
  """
  tool_file = os.path.abspath(tool_file)
  root = os.path.dirname(os.path.dirname(tool_file))
  parts = [f'python {os.path.relpath(tool_file, root)}']
  for holder in flag_holders:
    value = holder.value
    is_path = isinstance(holder.default, str) and os.path.isabs(holder.default)
    if is_path:
      same = os.path.abspath(value) == os.path.abspath(holder.default)
      relative = os.path.relpath(os.path.abspath(value), root)
      value = os.path.abspath(value) if relative.startswith(os.pardir) else relative
    else:
      same = value == holder.default
      if isinstance(value, list):
        value = ','.join(str(item) for item in value)
    if not same or any(holder is kept for kept in always):
      parts.append(f'--{holder.name}={value}')
  return ' '.join(parts)


def scratch_dir(tool_file: str, name: str) -> str:
  """`<repository>/.work/<name>`: a tool's default work directory (git ignores `.work/`), inside
  the clone the tool runs from, so that no default points outside it."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(tool_file)))
  return os.path.join(root, '.work', name)


def required(holder, example: str) -> str:
  """`holder`'s value; without one, exits with one line that names the flag to pass.

  For inputs that live outside the repository (a corpus, GLUE, BLiMP), which a tool must not
  default to, and which only some of its modes read.

  Args:
    holder: an absl FlagHolder whose default is None.
    example: a value to show, e.g. `../shared/data/glue`.
  """
  if holder.value is None:
    what = flags.FLAGS[holder.name].help.rstrip('.') if holder.name in flags.FLAGS else 'path'
    raise SystemExit(f'error: pass --{holder.name}=<{what}>, e.g. --{holder.name}={example}')
  return holder.value
