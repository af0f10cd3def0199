"""The time-to-accuracy benchmark's scoring: every kept checkpoint on the one evaluation set.

Each framework's checkpoints are found and read its own way (`checkpoints`, `predictions`);
the score is the same for all of them: the share of the evaluation set's masked tokens whose
argmax MLM prediction is the original token (`mlm_accuracy`; a TEAMS run's generator). A TEAMS
run is also scored by its discriminator (`teams_scores`): the RTD AUC of telling the tokens its
own generator sampled into the masked positions from the original ones, over every real token.
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from teams_lab import child_processes
from teams_lab import model_garden_mlm
from teams_lab import model_garden_teams
from teams_lab import time_to_accuracy_data
from teams_tf.serving import loaders
from teams_tf.training import run_settings
from teams_tf.utils import atomic_files


def checkpoints(framework: str, model_dir: str) -> dict[int, tuple[str, float]]:
  """Step -> (checkpoint, the time it was written) of every checkpoint a run kept.

  A Hugging Face checkpoint is the directory `checkpoint-<step>/`, written when its
  `trainer_state.json` is; a TensorFlow one is the prefix `ckpt-<step>`, written with its index.

  Args:
    framework: 'teams_tf', 'model_garden' or 'hugging_face'.
    model_dir: the run's model directory.
  """
  found = {}
  if framework == 'hugging_face':
    for state in glob.glob(os.path.join(model_dir, 'checkpoint-*', 'trainer_state.json')):
      directory = os.path.dirname(state)
      found[int(directory.rsplit('-', 1)[1])] = (directory, os.path.getmtime(state))
  else:
    for index in glob.glob(os.path.join(model_dir, 'ckpt-*.index')):
      prefix = index[:-len('.index')]
      found[int(re.search(r'ckpt-(\d+)$', prefix).group(1))] = (prefix, os.path.getmtime(index))
  return found


def mlm_accuracy(predicted_ids: np.ndarray, evaluation: dict[str, np.ndarray]) -> float:
  """Share of the masked tokens predicted exactly (weight 0 slots excluded).

  Args:
    predicted_ids: [N, P] int argmax predictions.
    evaluation: the evaluation set (`masked_lm_ids` [N, P], `masked_lm_weights` [N, P]).
  """
  weights = evaluation['masked_lm_weights']
  correct = (predicted_ids == evaluation['masked_lm_ids']) * weights
  return float(correct.sum() / weights.sum())


def rtd_auc(replaced_scores: np.ndarray, replaced: np.ndarray, weights: np.ndarray) -> float:
  """ROC AUC of scores for "replaced" over the weighted tokens (Mann-Whitney U, ties count 1/2).

  Args:
    replaced_scores: [N, T] higher where a token looks replaced (any monotone scale).
    replaced: [N, T] 1 where the token was replaced, else 0.
    weights: [N, T] 1 for the tokens that count (real tokens), 0 for padding.
  """
  keep = weights.reshape(-1) > 0
  scores = replaced_scores.reshape(-1)[keep].astype(np.float64)
  labels = replaced.reshape(-1)[keep] > 0
  positives, negatives = int(labels.sum()), int((~labels).sum())
  if not positives or not negatives:
    return float('nan')
  order = np.argsort(scores, kind='stable')
  ranks = np.empty(len(scores))
  ranks[order] = np.arange(1, len(scores) + 1)
  # Tied scores share the mean of their ranks.
  unique, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
  rank_sums = np.zeros(len(unique))
  np.add.at(rank_sums, inverse, ranks)
  ranks = (rank_sums / counts)[inverse]
  return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def _tf_outputs(model, evaluation, keys, batch_size=512) -> dict[str, np.ndarray]:
  """`model(batch)[key]` for each of `keys` over the evaluation set, concatenated."""
  outputs = {key: [] for key in keys}
  for start in range(0, len(evaluation['input_word_ids']), batch_size):
    batch = {name: values[start:start + batch_size] for name, values in evaluation.items()}
    result = model(batch, training=False)
    for key in keys:
      outputs[key].append(result[key].numpy())
  return {key: np.concatenate(values) for key, values in outputs.items()}


def teams_scores(framework: str, model, evaluation) -> dict[str, float]:
  """Generator MLM accuracy and discriminator RTD AUC of a restored TEAMS pretrainer.

  Args:
    framework: 'teams_tf' (ours: `rtd_logits` are log-odds that a token is original,
      `rtd_labels` 1 where it is) or 'model_garden_teams' (`disc_rtd_logits` are log-odds that
      it was replaced, `disc_rtd_label` 1 where it was).
    model: the pretrainer.
    evaluation: the evaluation set's arrays.
  """
  if framework == 'model_garden_teams':
    out = _tf_outputs(model, evaluation, ('lm_outputs', 'disc_rtd_logits', 'disc_rtd_label'))
    logits, replaced_scores, replaced = (out['lm_outputs'], out['disc_rtd_logits'],
                                         out['disc_rtd_label'])
  else:
    out = _tf_outputs(model, evaluation, ('mlm_logits', 'rtd_logits', 'rtd_labels'))
    logits, replaced_scores, replaced = (out['mlm_logits'], -out['rtd_logits'],
                                         1 - out['rtd_labels'])
  return dict(mlm_accuracy=mlm_accuracy(np.argmax(logits, axis=-1), evaluation),
              rtd_auc=rtd_auc(replaced_scores, replaced, evaluation['input_mask']))


def _tf_predictions(model, evaluation, batch_size=512) -> np.ndarray:
  """argmax of `model(batch)['mlm_logits']` ([B, P, V]) over the evaluation set: [N, P]."""
  predicted = []
  for start in range(0, len(evaluation['input_word_ids']), batch_size):
    batch = {name: values[start:start + batch_size] for name, values in evaluation.items()}
    predicted.append(np.argmax(model(batch, training=False)['mlm_logits'].numpy(), axis=-1))
  return np.concatenate(predicted)


def predictions(framework: str, run, checkpoint: str, evaluation) -> np.ndarray:
  """[N, P] argmax MLM predictions of one checkpoint of `run` on the evaluation set.

  Args:
    framework: 'teams_tf' (our pretrainer, as `loaders` restores it from the run's
      params.yaml), 'model_garden' (`model_garden_mlm.restored_model`) or 'hugging_face'
      (`hugging_face_mlm predict`, in a PyTorch process of its own).
    run: the run's `time_to_accuracy.Settings`.
    checkpoint: a checkpoint of `checkpoints`.
    evaluation: the evaluation set's arrays.
  """
  if framework == 'hugging_face':
    with tempfile.TemporaryDirectory() as scratch:
      out = os.path.join(scratch, 'predicted.npz')
      subprocess.run([sys.executable, '-m', 'teams_lab.hugging_face_mlm', 'predict',
                      os.path.dirname(run.model_dir), checkpoint, out],
                     check=True, env=child_processes.environment())
      with np.load(out) as arrays:
        return arrays['predicted_ids']
  if framework == 'model_garden':
    return _tf_predictions(model_garden_mlm.restored_model(run, checkpoint), evaluation)
  return _tf_predictions(_restored_teams_tf(run, checkpoint), evaluation)


def _restored_teams_tf(run, checkpoint: str):
  """Our pretrainer of `run`, as `loaders` restores it from the run's params.yaml."""
  params_path = os.path.join(run.model_dir, 'params.yaml')
  model_config, build = run_settings.pretraining_model(
      run_settings.RunSettings(run.model_dir).params['task']['model'], params_path)
  return loaders.restored_pretrainer(build, model_config, checkpoint, run.vocab_file,
                                     run.seq_length)


def scores(framework: str, run, checkpoint: str, evaluation) -> dict[str, float]:
  """The scores of one checkpoint: `mlm_accuracy`, and `rtd_auc` for a TEAMS run (`run.model`)."""
  if framework == 'model_garden_teams':
    return teams_scores(framework, model_garden_teams.restored_model(run, checkpoint), evaluation)
  if framework == 'teams_tf' and run.model is not None:
    return teams_scores(framework, _restored_teams_tf(run, checkpoint), evaluation)
  return dict(mlm_accuracy=mlm_accuracy(predictions(framework, run, checkpoint, evaluation),
                                        evaluation))


def evaluate(framework: str, run, log=print) -> dict[int, dict]:
  """Scores every checkpoint of `run` not yet scored; returns step -> `scores` of all.

  Scores are kept in `<run_dir>/evaluations.json` as they come, so that an interrupted pass
  resumes where it stopped.
  """
  path = os.path.join(os.path.dirname(run.model_dir), 'evaluations.json')
  results = {}
  if os.path.exists(path):
    with open(path) as f:
      results = {int(step): row for step, row in json.load(f).items()}
  evaluation = time_to_accuracy_data.load_evaluation_set(run.evaluation_set)
  found = checkpoints(framework, run.model_dir)
  for step in sorted(set(found) - set(results)):
    results[step] = scores(framework, run, found[step][0], evaluation)
    log(f'{run.implementation}: step {step:,}: held-out MLM accuracy '
        f'{results[step]["mlm_accuracy"]:.2%}'
        + (f', RTD AUC {results[step]["rtd_auc"]:.4f}' if 'rtd_auc' in results[step] else ''))
    atomic_files.write_json(path, {str(step): row for step, row in sorted(results.items())})
  return results
