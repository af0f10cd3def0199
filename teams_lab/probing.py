"""Linear probes of a frozen encoder: how much of a GLUE label each of its layers holds.

A diagnosis for encoders that fine-tune poorly (`replication`): the word embeddings (a bag of
words: the embedding table's rows, without positions) and each Transformer layer's output are
mean-pooled over the real tokens of every GLUE example, and a linear model (scikit-learn, features
standardized on the train set) learns the label from them on the train records and is scored on
dev: a logistic regression scored by accuracy for a class, a ridge regression scored by Spearman
correlation for STS-B's similarity score. Nothing in the encoder trains, so a probe tells what
pretraining put into the features apart from how easily fine-tuning moves them. A pre-LN layer's
output is its residual stream (the last one after the encoder's final LayerNorm); standardizing
the features makes the probes indifferent to scale.

Poolings: 'mean' averages each layer over the real tokens. 'cls' reads the layers at [CLS] alone,
the position Model Garden's sentence classifiers pool, which no pretraining loss here asks anything
of. 'pair', for sentence pairs, averages each sentence's tokens (segment 0, [CLS] and its [SEP]
included, and segment 1) into u and v and probes [|u - v|, u * v], SentEval's features for
similarity: a linear model cannot compare two sentences from one average of both. 'cosine' learns
nothing: per layer, the Spearman correlation with the labels of cos(u, v), each sentence encoded in
a pass of its own, what the `pooled` fine-tuning protocol's siamese STS-B head (5 x cos(u, v) of
the last layer) starts from, beside the mean cosine of unrelated pairs (each first sentence against
the previous pair's second): near 1, every sentence points the same way and that head starts with
every pair at about 5 (`cosine_scores`).
"""

import json
import os
from typing import Optional

import numpy as np
from scipy import stats
from sklearn import linear_model
from sklearn import metrics
from sklearn import preprocessing
import tensorflow as tf

from official.nlp.data import data_loader_factory
from official.nlp.data import sentence_prediction_dataloader

from teams_tf.layers import token_pooling

_ENCODER_INPUTS = ('input_word_ids', 'input_mask', 'input_type_ids')
POOLINGS = ('mean', 'cls', 'pair', 'cosine')
# Tasks whose label is a score: probed by a ridge regression, scored by Spearman correlation.
REGRESSION_TASKS = ('stsb',)
# Classification tasks scored by another metric than accuracy (their GLUE headline).
MATTHEWS_TASKS = ('cola',)
METRIC_NAMES = {'cola': 'Matthews correlation'}


def glue_records(path: str, seq_length: int, batch_size: int = 256,
                 label_type: str = 'int') -> tf.data.Dataset:
  """Every example of a GLUE task's records, in order, in batches.

  Read with Model Garden's sentence-prediction loader, as fine-tuning reads them: dicts of the
  encoder inputs [B, T] and `label_ids` [B], class ids ('int') or scores ('float', STS-B).

  Raises:
    ValueError: `path` does not exist.
  """
  if not tf.io.gfile.exists(path):
    raise ValueError(f'{path} does not exist: convert the task with tools/create_glue_data.py.')
  config = sentence_prediction_dataloader.SentencePredictionDataConfig(
      input_path=path, seq_length=seq_length, global_batch_size=batch_size, is_training=False,
      drop_remainder=False, label_type=label_type)
  return data_loader_factory.get_data_loader(config).load()


def layer_features(encoder, dataset: tf.data.Dataset,
                   pooling: str = 'mean') -> tuple[list[np.ndarray], np.ndarray]:
  """Pooled features of the embeddings and of every layer, with the labels.

  Args:
    encoder: a Model Garden encoder with `get_embedding_table` and dict outputs with
      `encoder_outputs`.
    dataset: `glue_records`' batches.
    pooling: one of POOLINGS (see the module docstring); with 'cls' the word embeddings are
      still averaged (at [CLS] they would be one constant).

  Returns:
    ([embeddings, layer 1, ..., layer L], each [N, H], or [N, 2H] with 'pair' ([|u - v|, u * v])
    and 'cosine' ([u, v], each sentence's layers from a pass of its own)), labels [N].

  Raises:
    ValueError: `pooling` is not one of POOLINGS, or is 'pair' or 'cosine' and an example has no
      second sentence.
  """
  if pooling not in POOLINGS:
    raise ValueError(f'pooling={pooling!r} must be one of {POOLINGS}.')
  table = encoder.get_embedding_table()  # [V, E]
  pooled, labels = [], []
  for batch in dataset:
    inputs = {key: batch[key] for key in _ENCODER_INPUTS}
    words = tf.gather(table, inputs['input_word_ids'])  # [B, T, E]
    mask = tf.cast(inputs['input_mask'], tf.float32)[..., None]  # [B, T, 1]
    second = tf.cast(inputs['input_type_ids'], tf.float32)[..., None] * mask  # [B, T, 1]
    if pooling in ('pair', 'cosine') and not tf.reduce_all(tf.reduce_sum(second, axis=1) > 0):
      raise ValueError(f'pooling={pooling!r} needs sentence pairs (input_type_ids 1 on the '
                       'second sentence) in every example; use it with STS-B, not a '
                       'single-sentence task.')

    def mean(states, weights=mask):
      return tf.reduce_sum(states * weights, axis=1) / tf.reduce_sum(weights, axis=1)

    def pool(states, layer_pooling, second_states=None):
      if layer_pooling == 'cosine':
        u = mean(states, mask - second)
        v = mean(states if second_states is None else second_states, second)
        return tf.concat([u, v], axis=-1).numpy()
      if layer_pooling == 'pair':
        u, v = mean(states, mask - second), mean(states, second)  # [B, H] each
        return tf.concat([tf.abs(u - v), u * v], axis=-1).numpy()
      return (states[:, 0] if layer_pooling == 'cls' else mean(states)).numpy()

    if pooling == 'cosine':
      # As the siamese STS-B head encodes them: each sentence in a pass of its own.
      first_layers, second_layers = (
          encoder(dict(inputs, input_mask=segment), training=False)['encoder_outputs']
          for segment in token_pooling.segment_masks(inputs['input_mask'],
                                                     inputs['input_type_ids']))
      layers = [pool(a, pooling, b) for a, b in zip(first_layers, second_layers)]
    else:
      layers = [pool(states, pooling)
                for states in encoder(inputs, training=False)['encoder_outputs']]  # L x [B, T, H]
    pooled.append([pool(words, 'mean' if pooling == 'cls' else pooling)] + layers)
    labels.append(batch['label_ids'].numpy())
  return [np.concatenate(layer) for layer in zip(*pooled)], np.concatenate(labels)


def probe_score(train_features: np.ndarray, train_labels: np.ndarray,
                dev_features: np.ndarray, dev_labels: np.ndarray,
                regression: bool = False, matthews: bool = False) -> float:
  """Dev score of a linear model learned on standardized train features [N, H].

  A logistic regression scored by accuracy (with `matthews`, by Matthews correlation, CoLA's
  metric), or with `regression` a ridge regression (its penalty chosen by leave-one-out on
  train) scored by Spearman correlation, 0 when the dev predictions are constant.
  """
  scaler = preprocessing.StandardScaler().fit(train_features)
  train_x, dev_x = scaler.transform(train_features), scaler.transform(dev_features)
  if not regression:
    classifier = linear_model.LogisticRegression(max_iter=2000).fit(train_x, train_labels)
    if matthews:
      return float(metrics.matthews_corrcoef(dev_labels, classifier.predict(dev_x)))
    return float(classifier.score(dev_x, dev_labels))
  regressor = linear_model.RidgeCV(alphas=np.logspace(-2, 5, 15)).fit(train_x, train_labels)
  predictions = regressor.predict(dev_x)
  if np.ptp(predictions) == 0:
    return 0.0  # Spearman's correlation is undefined; the sweeps count it as 0 too.
  return float(stats.spearmanr(predictions, dev_labels)[0])


def probe(encoder, train: tf.data.Dataset, dev: tf.data.Dataset, pooling: str = 'mean',
          regression: bool = False, matthews: bool = False) -> list[float]:
  """Dev score (`probe_score`) of a probe on the embeddings and each layer, bottom first.

  Raises:
    ValueError: a bad `pooling` for the records (`layer_features`), or 'cosine', which learns
      nothing (`cosine_scores`).
  """
  if pooling == 'cosine':
    raise ValueError("pooling='cosine' trains no probe: score it with cosine_scores.")
  train_layers, train_labels = layer_features(encoder, train, pooling)
  dev_layers, dev_labels = layer_features(encoder, dev, pooling)
  return [probe_score(train_x, train_labels, dev_x, dev_labels, regression, matthews)
          for train_x, dev_x in zip(train_layers, dev_layers)]


def _cosines(u: np.ndarray, v: np.ndarray) -> np.ndarray:
  """Row-wise cosine of [N, H] arrays."""
  return np.sum(u * v, axis=1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))


def cosine_scores(encoder, dev: tf.data.Dataset) -> tuple[list[float], list[float]]:
  """The untrained similarity of sentence pairs, on the embeddings and each layer, bottom first.

  Returns:
    (the Spearman correlation of cos(u, v) with the labels, the mean cosine of unrelated pairs:
    u_i against v_(i-1)), u and v each sentence's mean-pooled tokens (see the module docstring).

  Raises:
    ValueError: an example has no second sentence (`layer_features`).
  """
  layers, labels = layer_features(encoder, dev, 'cosine')
  correlations, unrelated = [], []
  for features in layers:
    u, v = np.split(features.astype(np.float64), 2, axis=1)
    correlations.append(float(stats.spearmanr(_cosines(u, v), labels)[0]))
    unrelated.append(float(np.mean(_cosines(u, np.roll(v, 1, axis=0)))))
  return correlations, unrelated


_POOLED = {'mean': 'mean-pooled', 'cls': 'at [CLS]',
           'pair': 'as [|u - v|, u * v] of its two sentences\' mean-pooled tokens u and v'}


def result_name(task: str, pooling: str) -> str:
  """'probes_<task>', with '_<pooling>' unless it is 'mean': the report's file name."""
  return f'probes_{task}{"" if pooling == "mean" else "_" + pooling}'


def read_report(out_dir: str, task: str, pooling: str) -> dict:
  """The committed `<out_dir>/<result_name>.json` of a probe; {} when it has not run."""
  path = os.path.join(out_dir, result_name(task, pooling) + '.json')
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return json.load(f)


def merge_scores(out_dir: str, task: str, pooling: str, scores: dict[str, list[float]],
                 order, key: str = 'scores') -> dict[str, list[float]]:
  """The rows of the committed `<out_dir>/<result_name>.json` (its table `key`) with `scores`'
  rows put in.

  A probe of some encoders adds their rows to the report (or replaces theirs) instead of dropping
  the others', whose pretraining runs may no longer be on this machine.

  Args:
    out_dir, task, pooling: where the report is and which probe it holds.
    scores: encoder name -> its row (embeddings, layer 1, ...), as `probe` returns.
    order: encoder names in the order the report lists them; names not in it go last.

  Returns:
    Encoder name -> row, in `order`.
  """
  merged = read_report(out_dir, task, pooling).get(key, {})
  merged.update(scores)
  rank = {name: i for i, name in enumerate(order)}
  return dict(sorted(merged.items(), key=lambda item: rank.get(item[0], len(rank))))


def table(scores: dict[str, list[float]], label: str = 'encoder') -> list[str]:
  """Markdown lines of one probe table: a row per encoder, a column per layer (x 100), `label`
  heading the encoder column."""
  depth = max(len(row) for row in scores.values())
  lines = [f'| {label} | embeddings | ' + ' | '.join(f'layer {i}' for i in range(1, depth)) +
           ' |', '|---|' + '---:|' * depth]
  return lines + [f'| {name} | ' + ' | '.join(f'{100 * value:.1f}' for value in row) + ' |'
                  for name, row in scores.items()]


def markdown(scores: dict[str, list[float]], task: str, pooling: str, data_dir: str,
             command: str, unrelated: Optional[dict[str, list[float]]] = None) -> str:
  """The report of `tools/probe_encoders.py` (its `command` line): one row per encoder, one
  column per layer (x 100); for 'cosine', `cosine_scores`' correlations as `scores`, then its
  unrelated pairs' mean cosines, `unrelated` (required with 'cosine')."""
  if pooling == 'cosine':
    return '\n'.join(
        [f'# Untrained cosine similarity on {task} (sentence pairs)', '',
         f'`{command}`: dev Spearman correlation x 100 of cos(u, v) with the labels, u and v '
         "the two sentences' mean-pooled word embeddings or layer outputs of each frozen "
         "encoder (each sentence's layers from a pass of its own), nothing learned: what the "
         "`pooled` protocol's STS-B head, 5 x cos(u, v), starts fine-tuning from "
         f'({data_dir}; `teams_lab/probing.py`).', ''] + table(scores) +
        ['', 'Mean cosine x 100 of unrelated pairs (each first sentence against the previous '
         "pair's second): near 100, every sentence points the same way and the head starts "
         'with every pair near 5.', ''] + table(unrelated)) + '\n'
  regression = task in REGRESSION_TASKS
  preamble = (f'`{command}`: dev '
              f'{"Spearman correlation" if regression else METRIC_NAMES.get(task, "accuracy")}'
              ' x 100 of a '
              f'{"ridge" if regression else "logistic"} regression on frozen features of each '
              'encoder: its word embeddings and each layer\'s output, '
              + ('mean-pooled and at [CLS] respectively' if pooling == 'cls' else _POOLED[pooling])
              + f' ({data_dir}; `teams_lab/probing.py`).')
  title = '' if pooling == 'mean' else f' ({"[CLS]" if pooling == "cls" else "sentence pairs"})'
  return '\n'.join([f'# Linear probes on {task}{title}', '', preamble, ''] + table(scores)) + '\n'
