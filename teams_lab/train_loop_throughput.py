"""End-to-end throughput of `teams_tf.train` itself, read from its own training summaries.

The pretraining benchmark times one compiled step on a fixed batch. A user's run adds the input
pipeline (text read, tokenized and masked on the fly), Orbit's loop, metric reduction and
summaries around that step; this module runs `python -m teams_tf.train` on an experiment config
and reads Orbit's per-loop `steps_per_second` back from the TensorBoard summaries, so that a
regression of the real loop shows beside the step it wraps.

Loop 1 includes tracing, the first batches and the optimizer's slot creation ("first loop");
the later loops are the steady state, summarised by their median. Checkpoints are written after
the first loop (Orbit always saves then; its time falls into loop 2, which the median of three or
more steady loops leaves out) and after the last, not in between: a run checkpoints every
`checkpoint_interval` steps, a cost per run rather than per step.
"""

import math
import os
import resource
import statistics
import subprocess
import sys
import time

from official.modeling import hyperparams

from teams_tf.data import embedded
from teams_tf.data import tokenization
from teams_tf.training import run_summary


def write_padded_vocabulary(vocab_file: str, vocab_size: int, path: str) -> str:
  """Writes `vocab_file` followed by `[unused<i>]` pieces up to `vocab_size` lines; returns path.

  The paper sizes use BERT's 30,522-token table while the embedded sample vocabulary has fewer
  tokens; the padded file keeps the sample's tokenization and gives the model its full table, so
  the run has the benchmarked step's shapes and passes the task's vocabulary-size check.

  Raises:
    ValueError: `vocab_file` already has more than `vocab_size` tokens.
  """
  with open(embedded.resolve_path(vocab_file), encoding='utf-8') as f:
    tokens = [line.rstrip('\n') for line in f if line.strip()]
  if len(tokens) > vocab_size:
    raise ValueError(f'{vocab_file} has {len(tokens):,} tokens, more than vocab_size '
                     f'{vocab_size:,}; the padded vocabulary can only grow it.')
  tokens += [f'[unused{i}]' for i in range(vocab_size - len(tokens))]
  with open(path, 'w', encoding='utf-8') as f:
    f.write('\n'.join(tokens) + '\n')
  return path


def measure(params, experiment: str, work_dir: str, loops: int, steps_per_loop: int) -> dict:
  """Trains `params` with `teams_tf.train` for `loops` loops; returns the loop timings.

  Args:
    params: the run's ExperimentConfig; its trainer fields for steps, loops, summaries and
      checkpoints are set here, its task and runtime are used as they are.
    experiment: the registered experiment whose config type `params` has (`--experiment`).
    work_dir: an empty directory for the config, the model_dir and the log.
    loops: number of training loops, >= 2 (the first is not steady-state; 4 or more keep the
      save after the first loop out of the steady median).
    steps_per_loop: steps per loop; every loop writes one summary.

  Returns:
    Dict with `loop_steps_per_second` (one per loop, from Orbit's summaries),
    `first_loop_seconds`, `steady_steps_per_second` (median of loops 2..), `losses` (training
    loss at the end of each loop), `finite`, `wall_seconds` of the whole command (start-up
    included), `peak_rss_mib` of the training process and its `command`.

  Raises:
    RuntimeError: the command failed; the message ends with the tail of its log.
  """
  if loops < 2:
    raise ValueError(f'loops={loops}: need >= 2 (the first loop traces and compiles).')
  trainer = params.trainer
  trainer.train_steps = loops * steps_per_loop
  trainer.steps_per_loop = trainer.summary_interval = steps_per_loop
  trainer.checkpoint_interval = trainer.train_steps
  config_file = os.path.join(work_dir, 'params.yaml')
  hyperparams.save_params_dict_to_yaml(params, config_file)
  model_dir = os.path.join(work_dir, 'run')
  command = [sys.executable, '-m', 'teams_tf.train', f'--experiment={experiment}',
             '--mode=train', f'--model_dir={model_dir}', f'--config_file={config_file}']
  log_path = os.path.join(work_dir, 'train.log')
  start = time.perf_counter()
  with open(log_path, 'w') as log:
    status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
  wall_seconds = time.perf_counter() - start
  if status:
    with open(log_path) as f:
      tail = [line.rstrip() for line in f if line.strip()][-5:]
    # teams_tf.train's own failures are one `error: ...` line; anything else shows its tail.
    errors = [line for line in tail if line.startswith('error: ')]
    raise RuntimeError(f'{" ".join(command)} exited with {status}: ' +
                       (errors[-1] if errors else ' / '.join(tail)))
  summaries = run_summary.read_scalars(os.path.join(model_dir, 'train'))
  loop_rows = [summaries[step] for step in sorted(summaries) if 'steps_per_second' in
               summaries[step]]
  rates = [row['steps_per_second'] for row in loop_rows]
  if len(rates) != loops:
    raise RuntimeError(f'{model_dir}/train has {len(rates)} loop summaries, expected {loops}.')
  losses = [row.get('training_loss', float('nan')) for row in loop_rows]
  return dict(loop_steps_per_second=rates, first_loop_seconds=steps_per_loop / rates[0],
              steady_steps_per_second=statistics.median(rates[1:]), losses=losses,
              finite=all(math.isfinite(loss) for loss in losses),
              wall_seconds=wall_seconds, command=command,
              peak_rss_mib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def vocabulary_size(vocab_file: str) -> int:
  """Tokens in a vocabulary file (embedded `sample:` names included)."""
  return tokenization.load_vocabulary(embedded.resolve_path(vocab_file)).size
