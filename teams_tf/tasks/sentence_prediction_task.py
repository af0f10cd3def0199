"""GLUE fine-tuning: Model Garden's sentence prediction with a regression loss that can be fitted.

Model Garden 2.20's `SentencePredictionTask` scores a regression task (STS-B, `num_classes` 1)
with `mean_squared_error(label_ids, logits)`: labels [B] against logits [B, 1], which Keras
broadcasts to [B, B] before averaging the last axis. Every prediction is then scored against
every label of its batch, the loss is minimized by predicting the batch mean whatever the input
(a perfect prediction costs twice the labels' variance), and a fine-tuned model learns nothing
but that mean: STS-B Spearman at chance for any encoder, pretrained or not. Its validation also
reports a `mean_squared_error` of 0, a metric built but never updated. This task is Model
Garden's with those two fixed; classification tasks run Model Garden's code unchanged.
"""

import dataclasses

import tensorflow as tf

from official.core import task_factory
from official.nlp.tasks import sentence_prediction


@dataclasses.dataclass
class SentencePredictionConfig(sentence_prediction.SentencePredictionConfig):
  """Model Garden's sentence-prediction config, run by `SentencePredictionTask` below."""


@task_factory.register_task_cls(SentencePredictionConfig)
class SentencePredictionTask(sentence_prediction.SentencePredictionTask):
  """Model Garden's sentence prediction; regression compares each prediction with its label."""

  def _regression(self) -> bool:
    return self.task_config.model.num_classes == 1

  def _paired_labels(self, labels: dict) -> dict:
    """`labels` with the label field as [B, 1], the shape of a regression model's outputs."""
    return dict(labels, **{self.label_field: tf.reshape(labels[self.label_field], [-1, 1])})

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    """Regression: mean over the batch of (prediction - label)^2; otherwise Model Garden's.

    Args:
      labels: the features, with the label field [B] (float for regression).
      model_outputs: [B, num_classes] logits, [B, 1] predictions for regression.
      aux_losses: losses added to the result.
    """
    if self._regression():
      labels = self._paired_labels(labels)
    return super().build_losses(labels, model_outputs, aux_losses)

  def process_metrics(self, metrics, labels, model_outputs):
    if not self._regression():
      super().process_metrics(metrics, labels, model_outputs)
      return
    paired = self._paired_labels(labels)[self.label_field]
    for metric in metrics:
      metric.update_state(paired, model_outputs)
