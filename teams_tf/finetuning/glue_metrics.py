"""GLUE dev-set metrics as reported by the TEAMS paper, from predictions and labels.

TEAMS (Table 2, following ELECTRA) reports Matthews correlation for CoLA, Spearman correlation for
STS-B and accuracy for every other task; its GLUE score is the average of those per-task numbers.
We also compute F1 of the positive class for MRPC and QQP (GLUE's second metric there), Pearson for
STS-B, and Model Garden's STS-B validation metric `pearson_spearman_corr`, the mean of Pearson and
Spearman (`official/nlp/tasks/sentence_prediction.py`), labelled as such. The classification
metrics are scikit-learn's and the correlations SciPy's, the libraries Model Garden's
sentence-prediction task computes them with (both come with tf-models-official).
"""

import numpy as np
from scipy import stats
from sklearn import metrics as sklearn_metrics

# Metrics per task; the first one is the paper's headline metric for that task.
TASK_METRICS = {
    'cola': ('matthews_corrcoef', 'accuracy'),
    'sst2': ('accuracy',),
    'mrpc': ('accuracy', 'f1'),
    'qqp': ('accuracy', 'f1'),
    'mnli': ('accuracy',),
    'qnli': ('accuracy',),
    'rte': ('accuracy',),
    'stsb': ('spearman', 'pearson', 'pearson_spearman_corr'),
}

DESCRIPTIONS = {
    'accuracy': 'accuracy',
    'f1': 'F1 of the positive class',
    'matthews_corrcoef': 'Matthews correlation',
    'spearman': 'Spearman correlation',
    'pearson': 'Pearson correlation',
    'pearson_spearman_corr': "Model Garden's STS-B metric: (Pearson + Spearman) / 2",
}


def headline_metric(task):
  """The metric the TEAMS paper reports for `task` (and averages into its GLUE score)."""
  return TASK_METRICS[task][0]


def _as_arrays(predictions, labels):
  predictions = np.asarray(predictions).reshape(-1)
  labels = np.asarray(labels).reshape(-1)
  if predictions.shape != labels.shape or not predictions.size:
    raise ValueError(f'Need equally many predictions and labels, at least one; got '
                     f'{predictions.size} predictions and {labels.size} labels.')
  return predictions, labels


def accuracy(predictions, labels):
  """Fraction of [N] predicted class ids equal to the [N] labels."""
  predictions, labels = _as_arrays(predictions, labels)
  return float(sklearn_metrics.accuracy_score(labels, predictions))


def f1(predictions, labels, positive_label=1):
  """F1 of `positive_label` = 2 TP / (2 TP + FP + FN); 0.0 when there is no positive anywhere."""
  predictions, labels = _as_arrays(predictions, labels)
  return float(sklearn_metrics.f1_score(labels, predictions, pos_label=positive_label,
                                        average='binary', zero_division=0.0))


def matthews_corrcoef(predictions, labels):
  """Matthews correlation in its multi-class form (Gorodkin, 2004), which reduces to the binary one.

  0.0 when all labels or all predictions are one class (the formula's denominator is 0).
  """
  predictions, labels = _as_arrays(predictions, labels)
  return float(sklearn_metrics.matthews_corrcoef(labels, predictions))


def _correlation(function, predictions, labels):
  predictions, labels = _as_arrays(predictions, labels)
  if np.ptp(predictions) == 0 or np.ptp(labels) == 0:
    return float('nan')  # Undefined for a constant input (SciPy warns and returns NaN too).
  return float(function(predictions.astype(np.float64), labels.astype(np.float64))[0])


def pearson(predictions, labels):
  """Pearson correlation of [N] scores with [N] labels; NaN if either is constant."""
  return _correlation(stats.pearsonr, predictions, labels)


def spearman(predictions, labels):
  """Spearman rank correlation (ties get average ranks); NaN if either input is constant."""
  return _correlation(stats.spearmanr, predictions, labels)


def pearson_spearman_corr(predictions, labels):
  """Model Garden's STS-B metric: the mean of Pearson and Spearman correlation."""
  return (pearson(predictions, labels) + spearman(predictions, labels)) / 2


_FUNCTIONS = {
    'accuracy': accuracy,
    'f1': f1,
    'matthews_corrcoef': matthews_corrcoef,
    'spearman': spearman,
    'pearson': pearson,
    'pearson_spearman_corr': pearson_spearman_corr,
}


def compute(task, predictions, labels):
  """All metrics of `task` (see TASK_METRICS) as {name: float in [-1, 1]}.

  Args:
    task: a GLUE task name, e.g. 'cola'.
    predictions: [N] predicted class ids, or [N] float scores for 'stsb'.
    labels: [N] gold class ids, or [N] float scores for 'stsb'.
  """
  if task not in TASK_METRICS:
    raise ValueError(f'Unknown GLUE task {task!r}; use one of {", ".join(TASK_METRICS)}.')
  return {name: _FUNCTIONS[name](predictions, labels) for name in TASK_METRICS[task]}


def encode_outputs(task, values):
  """[N] predictions or labels of `task`, compactly for a results file: a string of class ids
  ('0110...'), or for STS-B a list of scores rounded to 4 decimals."""
  if task == 'stsb':
    return [round(float(value), 4) for value in np.asarray(values).reshape(-1)]
  return ''.join(str(int(value)) for value in np.asarray(values).reshape(-1))


def decode_outputs(encoded):
  """`encode_outputs`' values as a [N] NumPy array."""
  if isinstance(encoded, str):
    return np.array([int(character) for character in encoded])
  return np.asarray(encoded, np.float64)


def _rowwise_pearson(x, y):
  x = x - x.mean(axis=1, keepdims=True)
  y = y - y.mean(axis=1, keepdims=True)
  denominator = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
  with np.errstate(invalid='ignore', divide='ignore'):
    return np.where(denominator > 0, (x * y).sum(axis=1) / denominator, 0.0)


def _rowwise_matthews(predictions, labels):
  """Gorodkin's multi-class MCC of each row of [D, N] class ids (0 where undefined)."""
  classes = int(max(predictions.max(), labels.max())) + 1
  true = np.stack([(labels == k).sum(axis=1) for k in range(classes)], axis=1)
  predicted = np.stack([(predictions == k).sum(axis=1) for k in range(classes)], axis=1)
  correct = (predictions == labels).sum(axis=1).astype(np.float64)
  total = labels.shape[1]
  numerator = correct * total - (true * predicted).sum(axis=1)
  denominator = np.sqrt((total ** 2 - (predicted ** 2).sum(axis=1)).astype(np.float64) *
                        (total ** 2 - (true ** 2).sum(axis=1)))
  with np.errstate(invalid='ignore', divide='ignore'):
    return np.where(denominator > 0, numerator / denominator, 0.0)


def resampled_headlines(task, result, indices):
  """[D] headline metrics of a run on D resamples of its dev examples, for bootstrap intervals.

  Args:
    task: the run's task.
    result: a sweep result with `dev_predictions` and `dev_labels` (`encode_outputs`).
    indices: [D, N] int, row d the dev examples of resample d.

  Returns:
    Row d: `compute(task, ...)[headline_metric(task)]` on those examples, but with an undefined
    correlation (constant predictions) as 0, as the replication counts it.
  """
  predictions = decode_outputs(result['dev_predictions'])[indices]
  labels = decode_outputs(result['dev_labels'])[indices]
  metric = headline_metric(task)
  if metric == 'accuracy':
    return (predictions == labels).mean(axis=1)
  if metric == 'matthews_corrcoef':
    return _rowwise_matthews(predictions, labels)
  if metric == 'spearman':
    return _rowwise_pearson(stats.rankdata(predictions, axis=1),
                            stats.rankdata(labels, axis=1))
  raise ValueError(f'No resampled form of {metric} ({task}).')
