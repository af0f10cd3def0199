"""What a measurement ran on: wall times mean little without the CPU that took them."""

import os
import platform
import re

# Vector extensions that change how fast the same model trains on CPUs of one model name:
# (/proc/cpuinfo flag, how reports name it).
_EXTENSIONS = (('avx512f', 'AVX-512'), ('avx512_bf16', 'AVX512_BF16'), ('amx_bf16', 'AMX'))


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


def cpu_signature() -> str:
  """E.g. 'family 25 model 17; AVX-512, AVX512_BF16'; '' where /proc/cpuinfo has no family.

  Virtual machines often name only the brand ('AMD EPYC'), which CPU generations with and
  without AVX-512 or native bfloat16 share (both have run this project's benchmarks): the family,
  model and vector extensions tell them apart, so that wall times are compared on one CPU only.
  """
  fields = cpuinfo()
  if 'cpu family' not in fields:
    return ''
  flags = set(fields.get('flags', '').split())
  extensions = [name for flag, name in _EXTENSIONS if flag in flags]
  return (f'family {fields["cpu family"]} model {fields.get("model", "?")}; '
          + (', '.join(extensions) if extensions else 'no AVX-512'))


def description() -> str:
  """The CPU, its signature and how many cores this process sees, as reports name the machine."""
  signature = cpu_signature()
  return f'{cpu_model()}{f" ({signature})" if signature else ""}, {os.cpu_count()} cores'


def machine_key(machine: str) -> str:
  """A directory name for the machine `description()` named, e.g. 'amd-epyc-family-25-...'."""
  return re.sub(r'[^a-z0-9]+', '-', machine.lower()).strip('-')
