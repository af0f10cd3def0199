"""Model Garden's dropout, layer-norm and GELU layers switched to the fused XLA kernels.

Model Garden's transformer blocks build their `Dropout` and `LayerNormalization` layers and tanh
GELU activations internally; `fuse(model)` switches the layers of a built model to the kernels
of `ops/fused_elementwise.py`. The pretraining Tasks do so for training
(`PretrainTaskConfig.fuse_elementwise_ops`), while the serving and scoring paths, which build
models directly, keep plain TensorFlow ops (no XLA needed to serve).
"""

import numbers

import tensorflow as tf
import tf_keras

from official.modeling import activations

from teams_tf.ops import fused_elementwise as kernels
from teams_tf.utils import upstream


class Dropout(tf_keras.layers.Dropout):
  """tf_keras `Dropout` whose training-time mask is drawn and applied in one XLA kernel."""

  def call(self, inputs, training=None):
    if (training is None or not isinstance(self.rate, numbers.Real) or self.rate == 0
        or self.noise_shape is not None or isinstance(training, tf.Tensor)):
      return super().call(inputs, training=training)
    if not training:
      return inputs
    # int32: the stateful draw every backend (TPUs included) compiles.
    seed = tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32, seed=self.seed)
    # Replicas may run the same stateful op from the same state (one XLA program on every TPU
    # core); the replica id keeps their masks apart.
    context = tf.distribute.get_replica_context()
    replica = tf.cast(context.replica_id_in_sync_group if context else 0, tf.int64)
    seed = tf.cast(seed, tf.int64) + tf.stack([tf.zeros_like(replica), replica])
    return kernels.dropout(inputs, self.rate, seed)


class LayerNormalization(tf_keras.layers.LayerNormalization):
  """tf_keras `LayerNormalization` over the last axis in one XLA kernel per pass."""

  def call(self, inputs):
    if (isinstance(inputs, tf.RaggedTensor) or list(self.axis) != [inputs.shape.rank - 1]
        or not (self.center and self.scale)):
      return super().call(inputs)
    return kernels.layer_norm(tf.cast(inputs, self.compute_dtype),
                              tf.convert_to_tensor(self.gamma), tf.convert_to_tensor(self.beta),
                              self.epsilon)


def fuse(model):
  """Switches the dropout, layer-norm and tanh-GELU layers of a built model to the XLA kernels.

  Model Garden's transformer blocks, attention layers and encoders create their `Dropout` and
  `LayerNormalization` layers internally, with no argument to choose the class, so the layers
  already built are given the subclasses above (which add no state and override only `call`):
  names, weights and checkpoint paths stay as they are. Layers of exactly these two tf_keras
  types are switched; any other layer, and any layer whose activation is not Model Garden's tanh
  GELU, is left alone.

  Args:
    model: a built Keras model or layer.

  Returns:
    Dict from 'dropout', 'layer_norm' and 'gelu' to the number of layers switched.

  Raises:
    RuntimeError: the model holds no tf_keras dropout or layer-norm layer, switched or not (the
      installed Model Garden's blocks no longer create them).
  """
  layers = [model, *model.submodules]
  if not any(isinstance(layer, (tf_keras.layers.Dropout, tf_keras.layers.LayerNormalization))
             for layer in layers):
    raise upstream.changed(
        'the model holds no tf_keras Dropout or LayerNormalization layer for the fused kernels '
        'to replace; set task.fuse_elementwise_ops=false to train with the plain layers')
  counts = dict(dropout=0, layer_norm=0, gelu=0)
  policy = tf_keras.mixed_precision.global_policy()
  for layer in layers:
    if type(layer) is tf_keras.layers.Dropout:  # pylint: disable=unidiomatic-typecheck
      layer.__class__ = Dropout
      counts['dropout'] += 1
    elif type(layer) is tf_keras.layers.LayerNormalization:  # pylint: disable=unidiomatic-typecheck
      layer.__class__ = LayerNormalization
      counts['layer_norm'] += 1
    if getattr(layer, 'activation', None) is activations.gelu:
      layer.activation = kernels.gelu
      counts['gelu'] += 1
      if (isinstance(layer, tf_keras.layers.Activation) and layer.compute_dtype == 'float32'
          and policy.compute_dtype != 'float32'):
        # Model Garden runs the feed-forward GELU in a float32 layer under mixed_bfloat16 and
        # casts around it; `kernels.gelu` computes in float32 whatever its input, so in the global
        # policy it returns the same bfloat16 values without the casts ([B, T, 4H], both passes).
        layer._set_dtype_policy(policy)  # pylint: disable=protected-access
  return counts
