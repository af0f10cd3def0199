"""Model Garden's MLM head with float32 logits (bias gradient in float32), tied or untied."""

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils
from official.nlp.modeling import layers

from teams_tf.ops import tied_logits


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class MaskedLM(layers.MaskedLM):
  """`official.nlp.modeling.layers.MaskedLM` whose logits are cast to float32 before the bias.

  Model Garden's head adds the output bias to the logits in the compute dtype. Under
  mixed_bfloat16 the bias gradient is then a BiasAddGrad summed in bfloat16 over the B·P rows,
  which stagnates once the running sum dwarfs the softmax terms: against float64, 2.6% L2 error
  at 640 rows of 30,522 (BERT-small's masked positions), 23% at 4,096. Here the bias is added in
  float32, and its gradient sums in float32 inside the product that also gives the table's
  (`ops/tied_logits.py`, the faster layout of the two). Same variables, names and checkpoints;
  the logits are float32 (every loss here casts them to float32 anyway).

  Given no `embedding_table`, the head owns an untied output table [V, E] ('output_embeddings',
  initialized like the encoder's embeddings): BERT and ELECTRA tie it to the input embeddings, and
  low-budget recipes (Geiping & Goldstein 2022) report untying helps small models.

  Call: `sequence_data` [B, T, H], `masked_positions` [B, P] int -> [B, P, V] float32 logits
  (log-probabilities with `output='predictions'`).
  """

  def __init__(self, embedding_table=None, vocab_size=None, embedding_width=None,
               embedding_initializer='glorot_uniform', **kwargs):
    """Initializes the head.

    Args:
      embedding_table: the tied [V, E] input embedding variable, or None for an untied one.
      vocab_size: V of an untied table (ignored when tied).
      embedding_width: E of an untied table (ignored when tied).
      embedding_initializer: initializer of an untied table.
      **kwargs: Model Garden `MaskedLM` arguments (`activation`, `initializer`, `output`, `name`).

    Raises:
      ValueError: no table and no `vocab_size`/`embedding_width` to make one.
    """
    if embedding_table is None and not (vocab_size and embedding_width):
      raise ValueError('An untied MaskedLM (embedding_table=None) needs vocab_size and '
                       f'embedding_width, got {vocab_size} and {embedding_width}.')
    super().__init__(embedding_table=embedding_table, **kwargs)
    self._untied_shape = None if embedding_table is not None else (vocab_size, embedding_width)
    self._embedding_initializer = tf_keras.initializers.get(embedding_initializer)

  def build(self, input_shape):
    if self._untied_shape is not None and self.embedding_table is None:
      self.embedding_table = self.add_weight(
          'output_embeddings', shape=self._untied_shape,
          initializer=self._embedding_initializer, trainable=True)
    super().build(input_shape)

  def call(self, sequence_data, masked_positions):
    hidden = self.layer_norm(self.dense(self._gather_indexes(sequence_data, masked_positions)))
    logits = tied_logits.tied_logits(hidden, self.embedding_table, self.bias)  # [B·P, V]
    logits = tf.reshape(logits, tf.concat([tf.shape(masked_positions), [self._vocab_size]], 0))
    logits.set_shape(masked_positions.shape.concatenate([self._vocab_size]))
    return logits if self._output_type == 'logits' else tf.nn.log_softmax(logits)


def output_head(embedding_table, tie_output_embeddings, activation, initializer, name,
                head_class=MaskedLM):
  """An MLM head over `embedding_table` [V, E], tied to it or with its own table of that shape.

  Args:
    embedding_table: the encoder's input embedding variable [V, E].
    tie_output_embeddings: True: the output layer is `embedding_table` (BERT, ELECTRA); False:
      an untied [V, E] table initialized with `initializer`.
    activation: activation of the transform.
    initializer: initializer of the transform (and of an untied table); cloned per use.
    name: Keras name of the head (part of the checkpoint format).
    head_class: `MaskedLM` or a subclass.

  Returns:
    A `head_class` instance.
  """
  initializer = tf_keras.initializers.get(initializer)
  if tie_output_embeddings:
    return head_class(embedding_table=embedding_table, activation=activation,
                      initializer=tf_utils.clone_initializer(initializer), name=name)
  vocab_size, embedding_width = embedding_table.shape
  return head_class(vocab_size=vocab_size, embedding_width=embedding_width,
                    embedding_initializer=tf_utils.clone_initializer(initializer),
                    activation=activation, initializer=tf_utils.clone_initializer(initializer),
                    name=name)
