"""The closing summary of a run: where it wrote, its last validation beside baselines, what next.

A metric alone does not say whether a run learned: a 15% MLM accuracy is the plateau on one
corpus and progress on another. So each accuracy and AUC of the last evaluation is printed beside
its chance level (0.5 for an AUC, 1/(K + 1) for MWS among K + 1 candidates) and its context-free
baseline where the task reports one (`mlm_context_free_accuracy`: the most frequent token at
[MASK] and copying elsewhere; `rtd_context_free_auc`, `mws_context_free_accuracy`: token
identity alone).
"""

import glob
import os
from typing import Optional

import tensorflow as tf

from teams_tf.utils import progress

# Metric -> the context-free baseline reported beside it in the same evaluation.
CONTEXT_FREE = {
    'mlm_accuracy': 'mlm_context_free_accuracy',
    'rtd_auc': 'rtd_context_free_auc',
    'mws_accuracy': 'mws_context_free_accuracy',
}


def read_scalars(event_dir: str) -> dict[int, dict[str, float]]:
  """Step -> {tag: value, 'wall_time': seconds} from the TensorBoard events under `event_dir`."""
  scalars = {}
  for path in sorted(glob.glob(os.path.join(event_dir, 'events.out.tfevents.*'))):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        number = (float(tf.make_ndarray(value.tensor)) if value.HasField('tensor')
                  else float(value.simple_value))
        row = scalars.setdefault(int(event.step), {})
        row[value.tag] = number
        row['wall_time'] = event.wall_time
  return scalars


def resumed_steps(event_dir: str) -> set[int]:
  """The first summary step of each restart: of every events file under `event_dir` but the first.

  Each start of a run writes a new events file, so the interval before such a step holds the time
  the run was down, wherever the checkpoint it resumed from was written.
  """
  firsts = []
  for path in sorted(glob.glob(os.path.join(event_dir, 'events.out.tfevents.*'))):
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      if event.summary.value:
        firsts.append(int(event.step))
        break
  return set(firsts[1:])


def chance_level(metric: str, model_config) -> Optional[float]:
  """What guessing scores on `metric`: 0.5 for an AUC, 1/(K + 1) for MWS; None if unknown."""
  if metric.endswith('_auc'):
    return 0.5
  if metric == 'mws_accuracy':
    return 1.0 / (model_config.num_negatives + 1)
  return None


def main_metrics(metrics: dict[str, float], model_config) -> list[str]:
  """The accuracies and AUCs of an evaluation that have a chance level or a context-free baseline.

  An accuracy over imbalanced classes, like RTD's, says little without one. Fine-tuning reports
  none that has: then every accuracy and AUC.
  """
  names = sorted(name for name in metrics
                 if name.endswith(('_accuracy', '_auc')) and 'context_free' not in name)
  compared = [name for name in names
              if name in CONTEXT_FREE or chance_level(name, model_config) is not None]
  return compared or names


def baseline(metric: str, metrics: dict[str, float], model_config) -> Optional[tuple[str, float]]:
  """('context-free' or 'chance', value) a run that reads context must beat on `metric`.

  The context-free baseline where the evaluation reports one (it is above chance: token identity
  alone tells a good part of RTD and MWS), else the chance level; None for neither.
  """
  if CONTEXT_FREE.get(metric) in metrics:
    return 'context-free', metrics[CONTEXT_FREE[metric]]
  chance = chance_level(metric, model_config)
  return None if chance is None else ('chance', chance)


def validation_lines(metrics: dict[str, float], model_config) -> list[str]:
  """One line per main metric (`main_metrics`) of an evaluation, with its chance and baseline."""
  names = main_metrics(metrics, model_config)
  width = max((len(name) for name in names), default=0)
  lines = []
  for name in names:
    notes = []
    chance = chance_level(name, model_config)
    if chance is not None:
      notes.append(f'chance {chance:.3f}')
    if CONTEXT_FREE.get(name) in metrics:
      notes.append(f'context-free {metrics[CONTEXT_FREE[name]]:.3f}')
    lines.append(f'{name:{width}}  {metrics[name]:.3f}' + (f'  ({"; ".join(notes)})'
                                                           if notes else ''))
  return lines


def _next_commands(size: Optional[str], model_dir: str) -> list[str]:
  """Export and fine-tuning commands for a pretraining run of `size`; none without a size."""
  if size is None:
    return []
  model_dir = model_dir.rstrip('/')
  # The installed console scripts (setup.py), which work outside a clone too.
  return [
      'export the encoder: teams-export --kind=encoder '
      f'--model_dir={model_dir} --export_dir={model_dir}_encoder',
      f'fine-tune on GLUE:  teams-run-glue --tasks=sst2 --size={size} '
      f'--init_checkpoint={model_dir} --data_dir=<GLUE records> --output_dir=<runs> '
      '(README: "Fine-tuning on GLUE and SQuAD")',
  ]


def closing_summary(model_dir: str, experiment: str, mode: str, model_config,
                    size: Optional[str] = None, seconds: Optional[float] = None) -> str:
  """The lines a run prints when it ends.

  Args:
    model_dir: the run's directory.
    experiment: its experiment name.
    mode: its --mode.
    model_config: `params.task.model` (for the MWS chance level).
    size: the size of a pretraining experiment (its fine-tuning experiments' size); None for
      other experiments, which get no next commands.
    seconds: how long the run took, start-up included; None leaves it out.
  """
  model_dir = os.path.abspath(model_dir)
  latest = tf.train.latest_checkpoint(model_dir)
  took = '' if seconds is None else f' ({progress.format_duration(seconds)} in all)'
  lines = [f'Done: {mode} of {experiment!r} in {model_dir}{took}',
           f'  checkpoint   {latest or "none"}',
           f'  summaries    tensorboard --logdir {model_dir}',
           f'  config       {os.path.join(model_dir, "params.yaml")}']
  validation = read_scalars(os.path.join(model_dir, 'validation'))
  if validation:
    step = max(validation)
    lines.append(f'  validation at step {step:,}:')
    lines += ['    ' + line for line in validation_lines(validation[step], model_config)]
  commands = _next_commands(size, model_dir)
  if commands:
    lines.append('  next:')
    lines += ['    ' + command for command in commands]
  return '\n'.join(lines)
