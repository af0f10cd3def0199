"""What a measurement ran on: wall times mean little without the CPU that took them."""

import os
import platform


def cpuinfo() -> dict[str, str]:
  """The first processor's /proc/cpuinfo fields ('model name', 'flags', ...); {} off Linux."""
  fields = {}
  if os.path.exists('/proc/cpuinfo'):
    with open('/proc/cpuinfo') as f:
      for line in f:
        key, _, value = line.partition(':')
        fields.setdefault(key.strip(), value.strip())
  return fields


def cpu_model() -> str:
  """E.g. 'AMD EPYC 7B13' from /proc/cpuinfo, else what `platform` knows (e.g. 'x86_64')."""
  return cpuinfo().get('model name') or platform.processor() or platform.machine()


def description() -> str:
  """The CPU model and how many cores this process sees, as reports name the machine."""
  return f'{cpu_model()}, {os.cpu_count()} cores'
