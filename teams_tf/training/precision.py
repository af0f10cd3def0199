"""The precision a run trains in: its experiment's, unless this hardware makes that one slower.

The paper-size experiments default to `mixed_bfloat16`, the papers' TPU setting. A CPU without
native bfloat16 arithmetic (no AVX512_BF16, no AMX) emulates it, and there a bfloat16 step runs
far below a float32 one (TEAMS small 14x and tiny 4.6x slower per step on a 2-core AMD EPYC
without AVX-512, benchmarks/pretrain_throughput_amd_epyc.md; no faster with oneDNN on,
benchmarks/pretrain_levers.md), so a run there gets float32 unless
the user set the precision. TPUs and GPUs keep bfloat16.
"""

from typing import Iterable, Optional

# /proc/cpuinfo flags of CPUs with native bfloat16 arithmetic.
NATIVE_BFLOAT16_FLAGS = ('avx512_bf16', 'amx_bf16')


def has_accelerator(distribution_strategy: Optional[str] = None) -> bool:
  """Whether a run with this `runtime.distribution_strategy` trains on TPUs or GPUs."""
  # Imported here: the research harness reads this module in processes that start TensorFlow
  # children but should not load it themselves.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return distribution_strategy == 'tpu' or bool(tf.config.list_physical_devices('GPU'))


def choose(configured: Optional[str], set_by_user: bool, has_accelerator: bool,
           cpu_flags: Iterable[str]) -> tuple[Optional[str], str]:
  """The runtime precision to train in, and one line saying which and why.

  Args:
    configured: `runtime.mixed_precision_dtype` of the run's config (None: float32).
    set_by_user: whether --params_override or --config_file named it; theirs is always kept.
    has_accelerator: the run trains on TPUs or GPUs (`has_accelerator`).
    cpu_flags: the CPU's feature flags (`hardware.cpuinfo()['flags'].split()`).

  Returns:
    (`runtime.mixed_precision_dtype` to use, the log line).
  """
  if configured != 'bfloat16':
    return configured, f'{configured or "float32"}, as configured'
  if set_by_user:
    return configured, 'bfloat16, as --params_override/--config_file set it'
  if has_accelerator:
    return configured, "bfloat16, the experiment's default on TPUs and GPUs"
  native = sorted(set(NATIVE_BFLOAT16_FLAGS) & set(cpu_flags))
  if native:
    return configured, f'bfloat16, the experiment\'s default: this CPU has {", ".join(native)}'
  return None, ("float32, not the experiment's bfloat16: this CPU has no native bfloat16 "
                '(no AVX512_BF16 or AMX), where bfloat16 runs slower than float32; '
                'set runtime.mixed_precision_dtype=bfloat16 to keep it')
