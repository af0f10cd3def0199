"""A sentence classifier or regressor over pooled token outputs, with targets in label units.

Model Garden's `BertClassifier` with its [CLS] head replaced by `layers.token_pooling`, dropout
and one output layer; for regression, the output is `regression_std * y + regression_mean`, so
that a fresh head starts at the labels' mean and learns in units of their spread (the task divides
the squared error by `regression_std`^2: regression on standardized targets), while predictions,
metrics and serving stay in label units.
"""

import tensorflow as tf
import tf_keras

from teams_tf.layers import token_pooling


def _named_inputs(network):
  """The encoder's Keras inputs as a dict (Model Garden encoders take a dict or a list)."""
  inputs = network.inputs
  if isinstance(inputs, dict):
    return inputs
  return dict(zip(('input_word_ids', 'input_mask', 'input_type_ids'), inputs))


class PooledClassifier(tf_keras.Model):
  """Encoder -> `TokenPooling` -> dropout -> dense [num_classes] (-> label units, regression);
  or for a `SIAMESE` pooling (regression only) the encoder once per segment and the prediction
  `similarity_scale` * cos(u, v), with no head weights: Sentence-BERT's regression objective
  (Section 3; STS-B's 0-5 labels over a cosine in [0, 1]). A learned scale and offset on a
  cosine would start near 0 and, at fine-tuning rates, move about 1e-4 a step: far too slowly
  to map cosines near 0.9 +- 0.07 onto labels 2.7 +- 1.5, so the encoder would see no gradient.

  Inputs: the encoder's dict of int32 [B, T] `input_word_ids`, `input_mask`, `input_type_ids`.
  Outputs: [B, num_classes] logits; [B, 1] predictions in label units when `num_classes` is 1.
  """

  def __init__(self, network: tf_keras.Model, num_classes: int, pooling: str = 'mean',
               dropout_rate: float = 0.1, initializer='glorot_uniform',
               regression_mean: float = 0.0, regression_std: float = 1.0,
               similarity_scale: float = 5.0, **kwargs):
    if regression_std <= 0:
      raise ValueError(f'regression_std={regression_std} must be positive.')
    inputs = _named_inputs(network)
    # No pooled head reads the encoder's [CLS] pooler: out of the optimizer, it is no longer
    # reported as variables without gradients, and it stays in the checkpoint. Not every Model
    # Garden encoder has one.
    if getattr(network, 'pooler_layer', None) is not None:
      network.pooler_layer.trainable = False
    pool = token_pooling.TokenPooling(pooling, name='token_pooling')
    if pooling in token_pooling.SIAMESE:
      if num_classes != 1:
        raise ValueError(f'pooling={pooling!r} predicts a similarity score: it needs '
                         f'num_classes=1 (a regression task such as STS-B), not {num_classes}.')
      first, second = (network(dict(inputs, input_mask=mask))['sequence_output'] for mask in
                       token_pooling.segment_masks(inputs['input_mask'],
                                                   inputs['input_type_ids']))
      cosine = pool(first, inputs['input_mask'], inputs['input_type_ids'], second)
      outputs = tf_keras.layers.Rescaling(similarity_scale, name='label_units')(
          tf.cast(cosine, tf.float32))
    else:
      pooled = pool(network(inputs)['sequence_output'], inputs['input_mask'],
                    inputs['input_type_ids'])
      pooled = tf_keras.layers.Dropout(dropout_rate)(pooled)
      outputs = tf_keras.layers.Dense(num_classes, kernel_initializer=initializer,
                                      name='sentence_prediction')(pooled)
      if num_classes == 1:
        outputs = tf_keras.layers.Rescaling(regression_std, regression_mean,
                                            name='label_units')(tf.cast(outputs, tf.float32))
    super().__init__(inputs=inputs, outputs=outputs, **kwargs)
    self._network = network

  @property
  def checkpoint_items(self):
    """What fine-tuning restores from a pretraining checkpoint: the encoder (Model Garden's key)."""
    return dict(encoder=self._network)
