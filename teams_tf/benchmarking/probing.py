"""Linear probes of a frozen encoder: how much of a GLUE label each of its layers holds.

A diagnosis for encoders that fine-tune poorly (`replication`): the word embeddings (a bag of
words: the embedding table's rows, without positions) and each Transformer layer's output are
mean-pooled over the real tokens of every GLUE example, and a logistic regression (scikit-learn,
features standardized on the train set) learns the label from them on the train records and is
scored on dev. Nothing in the encoder trains, so a probe tells what pretraining put into the
features apart from how easily fine-tuning moves them. A pre-LN layer's output is its residual
stream (the last one after the encoder's final LayerNorm); standardizing the features makes the
probes indifferent to scale. With `pooling='cls'` the layers are read at [CLS] alone, the position
Model Garden's sentence classifiers pool, which no pretraining loss here asks anything of.
"""

import numpy as np
from sklearn import linear_model
from sklearn import preprocessing
import tensorflow as tf

from official.nlp.data import data_loader_factory
from official.nlp.data import sentence_prediction_dataloader

_ENCODER_INPUTS = ('input_word_ids', 'input_mask', 'input_type_ids')
POOLINGS = ('mean', 'cls')


def glue_records(path: str, seq_length: int, batch_size: int = 256) -> tf.data.Dataset:
  """Every example of a classification task's GLUE records, in order, in batches.

  Read with Model Garden's sentence-prediction loader, as fine-tuning reads them: dicts of the
  encoder inputs [B, T] and `label_ids` [B].

  Raises:
    ValueError: `path` does not exist.
  """
  if not tf.io.gfile.exists(path):
    raise ValueError(f'{path} does not exist: convert the task with tools/create_glue_data.py.')
  config = sentence_prediction_dataloader.SentencePredictionDataConfig(
      input_path=path, seq_length=seq_length, global_batch_size=batch_size, is_training=False,
      drop_remainder=False)
  return data_loader_factory.get_data_loader(config).load()


def layer_features(encoder, dataset: tf.data.Dataset,
                   pooling: str = 'mean') -> tuple[list[np.ndarray], np.ndarray]:
  """Pooled features of the embeddings and of every layer, with the labels.

  Args:
    encoder: a Model Garden encoder with `get_embedding_table` and dict outputs with
      `encoder_outputs`.
    dataset: `glue_records`' batches.
    pooling: the layers' outputs averaged over the real tokens ('mean') or taken at [CLS]
      ('cls'); the word embeddings are always averaged (at [CLS] they would be one constant).

  Returns:
    ([embeddings, layer 1, ..., layer L], each [N, H]), labels [N].

  Raises:
    ValueError: `pooling` is not one of POOLINGS.
  """
  if pooling not in POOLINGS:
    raise ValueError(f'pooling={pooling!r} must be one of {POOLINGS}.')
  table = encoder.get_embedding_table()  # [V, E]
  pooled, labels = [], []
  for batch in dataset:
    inputs = {key: batch[key] for key in _ENCODER_INPUTS}
    words = tf.gather(table, inputs['input_word_ids'])  # [B, T, E]
    layers = encoder(inputs, training=False)['encoder_outputs']  # L x [B, T, H]
    mask = tf.cast(inputs['input_mask'], tf.float32)[..., None]  # [B, T, 1]

    def mean(states):
      return (tf.reduce_sum(states * mask, axis=1) / tf.reduce_sum(mask, axis=1)).numpy()

    pooled.append([mean(words)] + [mean(states) if pooling == 'mean' else states[:, 0].numpy()
                                   for states in layers])
    labels.append(batch['label_ids'].numpy())
  return [np.concatenate(layer) for layer in zip(*pooled)], np.concatenate(labels)


def probe_accuracy(train_features: np.ndarray, train_labels: np.ndarray,
                   dev_features: np.ndarray, dev_labels: np.ndarray) -> float:
  """Dev accuracy of a logistic regression learned on standardized train features [N, H]."""
  scaler = preprocessing.StandardScaler().fit(train_features)
  classifier = linear_model.LogisticRegression(max_iter=2000).fit(
      scaler.transform(train_features), train_labels)
  return float(classifier.score(scaler.transform(dev_features), dev_labels))


def probe(encoder, train: tf.data.Dataset, dev: tf.data.Dataset,
          pooling: str = 'mean') -> list[float]:
  """Dev accuracy of a probe on the embeddings and on each layer of `encoder`, bottom first.

  Raises:
    ValueError: `pooling` is not one of POOLINGS (`layer_features`).
  """
  train_layers, train_labels = layer_features(encoder, train, pooling)
  dev_layers, dev_labels = layer_features(encoder, dev, pooling)
  return [probe_accuracy(train_x, train_labels, dev_x, dev_labels)
          for train_x, dev_x in zip(train_layers, dev_layers)]


def markdown(accuracies: dict[str, list[float]], task: str, pooling: str, data_dir: str) -> str:
  """The report of `tools/probe_encoders.py`: one row per encoder, one column per layer (x 100)."""
  cls = pooling == 'cls'
  preamble = (f'`python tools/probe_encoders.py --task={task}{" --pooling=cls" * cls}`: dev '
              'accuracy x 100 of a logistic regression on frozen features of each encoder of the '
              'mini replication: mean-pooled word embeddings, and each layer '
              f'{"at [CLS]" if cls else "mean-pooled"} ({data_dir}; '
              '`teams_tf/benchmarking/probing.py`).')
  depth = max(len(row) for row in accuracies.values())
  lines = [f'# Linear probes on {task}{" ([CLS])" * cls}', '', preamble, '',
           '| encoder | embeddings | ' + ' | '.join(f'layer {i}' for i in range(1, depth)) + ' |',
           '|---|' + '---:|' * depth]
  for name, row in accuracies.items():
    lines.append(f'| {name} | ' + ' | '.join(f'{100 * value:.1f}' for value in row) + ' |')
  return '\n'.join(lines) + '\n'
