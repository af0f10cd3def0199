"""GLUE fine-tuning: Model Garden's sentence prediction with a regression loss that can be fitted.

Model Garden 2.20's `SentencePredictionTask` scores a regression task (STS-B, `num_classes` 1)
with `mean_squared_error(label_ids, logits)`: labels [B] against logits [B, 1], which Keras
broadcasts to [B, B] before averaging the last axis. Every prediction is then scored against
every label of its batch, the loss is minimized by predicting the batch mean whatever the input
(a perfect prediction costs twice the labels' variance), and a fine-tuned model learns nothing
but that mean: STS-B Spearman at chance for any encoder, pretrained or not. Its validation also
reports a `mean_squared_error` of 0, a metric built but never updated. This task is Model
Garden's with those two fixed; classification tasks run Model Garden's code unchanged.

Its model config adds how the head reads the encoder (`pooling`) and the scale of regression
targets; at their defaults the model is Model Garden's `BertClassifier`, otherwise
`models.pooled_classifier.PooledClassifier`.
"""

import dataclasses

import tensorflow as tf
import tf_keras

from official.core import task_factory
from official.nlp.configs import encoders
from official.nlp.tasks import sentence_prediction

from teams_tf.layers import token_pooling
from teams_tf.models import pooled_classifier

POOLINGS = ('cls',) + token_pooling.POOLINGS


@dataclasses.dataclass
class ModelConfig(sentence_prediction.ModelConfig):
  """Model Garden's classifier config, plus the head's input and the regression targets' scale.

  Attributes:
    pooling: 'cls' (Model Garden's head: a fresh dense+tanh layer on [CLS]; the papers'
      protocol), 'mean' (the mean of every token's output), 'segment_pair' (Sentence-BERT's
      [u, v, |u - v|, u * v] of the two segments' means) or 'siamese_cosine' (the cosine of
      the means of the segments encoded apart, Sentence-BERT's regression head), see
      `layers.token_pooling`.
    similarity_scale: 'siamese_cosine' only: predictions are similarity_scale * cos(u, v)
      (Sentence-BERT: STS-B's 0-5 labels over a cosine in [0, 1]), with no head weights.
    regression_mean, regression_std: `num_classes` 1 only: predictions are
      `regression_std * output + regression_mean` and the loss is the squared error over
      `regression_std`^2, i.e. regression on standardized targets; (0, 1) is Model Garden's.
  """
  pooling: str = 'cls'
  similarity_scale: float = 5.0
  regression_mean: float = 0.0
  regression_std: float = 1.0


@dataclasses.dataclass
class SentencePredictionConfig(sentence_prediction.SentencePredictionConfig):
  """Model Garden's sentence-prediction config, run by `SentencePredictionTask` below."""
  model: ModelConfig = dataclasses.field(default_factory=ModelConfig)


@task_factory.register_task_cls(SentencePredictionConfig)
class SentencePredictionTask(sentence_prediction.SentencePredictionTask):
  """Model Garden's sentence prediction; regression compares each prediction with its label."""

  def _regression(self) -> bool:
    return self.task_config.model.num_classes == 1

  def _model_garden_head(self) -> bool:
    model = self.task_config.model
    return (model.pooling, model.regression_mean, model.regression_std) == ('cls', 0.0, 1.0)

  def build_model(self):
    """Model Garden's `BertClassifier`, or a `PooledClassifier` for another pooling or scale.

    Raises:
      ValueError: an unknown pooling.
    """
    model = self.task_config.model
    if model.pooling not in POOLINGS:
      raise ValueError(f'task.model.pooling={model.pooling!r}; use one of {", ".join(POOLINGS)}.')
    if self._model_garden_head() or self.task_config.hub_module_url:
      return super().build_model()
    if model.pooling == 'cls':
      raise ValueError('task.model.pooling=cls reads [CLS] through Model Garden\'s head, which '
                       'has no regression scale: set regression_mean=0 and regression_std=1, or '
                       'pool the tokens (mean, segment_pair, siamese_cosine).')
    return pooled_classifier.PooledClassifier(
        encoders.build_encoder(model.encoder), model.num_classes, model.pooling,
        dropout_rate=model.encoder.get().dropout_rate,
        initializer=tf_keras.initializers.TruncatedNormal(
            stddev=model.encoder.get().initializer_range),
        regression_mean=model.regression_mean, regression_std=model.regression_std,
        similarity_scale=model.similarity_scale)

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
    if not self._regression():
      return super().build_losses(labels, model_outputs, aux_losses)
    # Squared error in units of the targets' spread (their standardized values).
    scale = self.task_config.model.regression_std ** 2
    return super().build_losses(self._paired_labels(labels), model_outputs) / scale + (
        tf.add_n(aux_losses) if aux_losses else 0.0)

  def process_metrics(self, metrics, labels, model_outputs):
    if not self._regression():
      super().process_metrics(metrics, labels, model_outputs)
      return
    paired = self._paired_labels(labels)[self.label_field]
    for metric in metrics:
      metric.update_state(paired, model_outputs)
