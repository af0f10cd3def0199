"""TACO pretrainer: MLM plus token-alignment contrast in one forward pass (Su et al., 2022, §3).

Data flow for one batch (shapes: B batch, T tokens, P masked slots, K negatives, V vocab):
  x^M --BertEncoderV2--> h [B, T, H] --MaskedLM--> MLM logits [B, P, V]                 (L_MLM)
  g = h - e [B, T, H], e the embedding output below the first layer                 (Eq. 3)
  each token: one positive g within W positions of its own sequence, K negatives g from
  other sequences of the (global) batch                                        (`token_pairs`)
The paper calls e the token's "static embedding" (Eq. 9); its released code takes the embedding
layer's output (word + position + type embeddings after their LayerNorm, BERT's
`hidden_states[0]`) and stops the gradient through the positives and negatives, MoCo-style. Both
matter at small scale: the raw word embedding (initialized at stddev 0.02) is ~50x shorter than
the LayerNormed h, so g = h - e would be h itself, and aligning it within a sequence would make
every h of the sequence alike, which MLM cannot read tokens from.
The encoder is Model Garden's `BertEncoderV2` and the head its `MaskedLM`, as for BERT; TACO adds
no parameters. The encoder is what is kept.
"""

import tensorflow as tf
import tf_keras

from teams_tf.configs import models as model_configs
from teams_tf.losses import contrastive
from teams_tf.models import mlm_pretrainer
from teams_tf.networks import encoder_embeddings
from teams_tf.ops import token_pairs
from teams_tf.ops import token_sampling

_POSITIONS = ('all', 'masked')


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class TacoPretrainer(mlm_pretrainer.SingleEncoderPretrainer):
  """One encoder with an MLM head and TACO's token pairs.

  Inputs (dict): `input_word_ids` [B, T] int32 (x^M), `input_mask` [B, T] int32,
  `input_type_ids` [B, T] int32, `masked_lm_positions` [B, P] int32, `masked_lm_ids` [B, P]
  int32, `masked_lm_weights` [B, P] float32 (0 for padded slots).

  Outputs (dict):
    `mlm_logits`: [B, P', V] float32, P' = P (masked positions) or T (MLM+TP), with
      `mlm_target_ids` [B, P'] int32 and `mlm_weights` [B, P'] float32 at the same positions.
    `global_semantics`: [B, T, H] float32 g = h - e (Eq. 3).
    `tc_positives`: [B, T, H] float32 g of each token's positive.
    `tc_negatives`: [B, T, K, H] float32 g of its K negatives (other sequences, global batch).
    `tc_weights`: [B, T] float32, 1 for anchors of L_TC (tokens with a positive; only masked
      ones for concentrated TACO).
    `sequence_output`: [B, T, H] h.

  Gradients: L_TC reaches the encoder and the embeddings through the anchors' h and e; through
  the positives and negatives too unless `stop_key_gradients`; the pair indices carry none.
  """

  def __init__(self, encoder_network, window_size=5, num_negatives=50, tc_positions='all',
               mlm_positions='masked', stop_key_gradients=True, **kwargs):
    """Initializes the pretrainer.

    Args:
      encoder_network: a Model Garden `BertEncoderV2` (dict outputs).
      window_size: W.
      num_negatives: K.
      tc_positions: 'all' or 'masked' anchors for L_TC.
      mlm_positions: 'masked' or 'all' MLM targets.
      stop_key_gradients: no gradient through `tc_positives` and `tc_negatives` (TACO's code).
      **kwargs: `SingleEncoderPretrainer` arguments (`mlm_activation`, `mlm_initializer`, `seed`
        of the pair-sampling stream) and Keras model arguments (`name`, ...).
    """
    for name, value in (('tc_positions', tc_positions), ('mlm_positions', mlm_positions)):
      if value not in _POSITIONS:
        raise ValueError(f'{name}={value!r} must be one of {_POSITIONS}.')
    super().__init__(encoder_network, **kwargs)
    self._window_size = window_size
    self._num_negatives = num_negatives
    self._tc_positions = tc_positions
    self._mlm_positions = mlm_positions
    self._stop_key_gradients = stop_key_gradients

  def call(self, inputs, training=None):
    """Runs the encoder once and draws the token pairs; see the class docstring."""
    word_ids = inputs['input_word_ids']
    input_mask = inputs['input_mask']
    positions = inputs['masked_lm_positions']
    weights = inputs['masked_lm_weights']
    sequence_output = self.encoder_network(
        dict(input_word_ids=word_ids, input_mask=input_mask,
             input_type_ids=inputs['input_type_ids']), training=training)['sequence_output']
    outputs = dict(sequence_output=sequence_output)
    if self._mlm_positions == 'masked':
      mlm_positions, targets, mlm_weights = positions, inputs['masked_lm_ids'], weights
    else:
      # The original sequence: the targets of token prediction at every position.
      targets, _ = token_sampling.replace_masked_tokens(
          word_ids, positions, weights, inputs['masked_lm_ids'], inputs['masked_lm_ids'])
      mlm_positions = tf.broadcast_to(tf.range(tf.shape(word_ids)[1]), tf.shape(word_ids))
      mlm_weights = input_mask
    outputs.update(
        mlm_logits=self.masked_lm(sequence_output, mlm_positions),
        mlm_target_ids=tf.cast(targets, tf.int32), mlm_weights=tf.cast(mlm_weights, tf.float32))

    static = encoder_embeddings.embedding_output(
        self.encoder_network, word_ids, inputs['input_type_ids'])
    semantics = tf.cast(sequence_output, tf.float32) - tf.cast(static, tf.float32)
    keys = tf.stop_gradient(semantics) if self._stop_key_gradients else semantics
    positive_seed, negative_seed = tf.unstack(self._seeds.next(2))
    positive_positions, valid = token_pairs.window_positives(
        input_mask, self._window_size, positive_seed)
    all_keys, offset = contrastive.gather_replicas(keys)  # [G, T, H]
    all_masks, _ = contrastive.gather_replicas(input_mask)
    rows, negative_positions = token_pairs.cross_sequence_negatives(
        all_masks, self._num_negatives, negative_seed, row_offset=offset,
        num_rows=tf.shape(word_ids)[0])
    tc_weights = tf.cast(valid, tf.float32)
    if self._tc_positions == 'masked':
      tc_weights *= tf.cast(token_sampling.masked_indicator(word_ids, positions, weights),
                            tf.float32)
    outputs.update(
        global_semantics=semantics,
        tc_positives=tf.gather(keys, positive_positions, batch_dims=1),
        tc_negatives=tf.gather_nd(all_keys, tf.stack([rows, negative_positions], -1)),
        tc_weights=tc_weights)
    return outputs



def validate_config(config: model_configs.TacoConfig):
  """Checks a TacoConfig without building anything; raises ValueError naming the field."""
  if config.window_size < 1:
    raise ValueError(f'window_size={config.window_size} must be >= 1 (TACO: 5).')
  if config.num_negatives < 1:
    raise ValueError(f'num_negatives={config.num_negatives} must be >= 1 (TACO: 50).')
  if config.temperature <= 0:
    raise ValueError(f'temperature={config.temperature} must be > 0 (TACO: 0.07).')
  if config.tc_loss_weight < 0:
    raise ValueError(f'tc_loss_weight={config.tc_loss_weight} must be >= 0 (TACO: 1).')
  for field in ('tc_positions', 'mlm_positions'):
    if getattr(config, field) not in _POSITIONS:
      raise ValueError(f'{field}={getattr(config, field)!r} must be one of {_POSITIONS}.')


def flop_shapes(config: model_configs.TacoConfig, seq_length: int) -> tuple[str, dict]:
  """What `training.flops.step_flops` counts of TACO beside B, T, P and the encoder: the
  negatives per anchor and whether MLM predicts every position (MLM+TP)."""
  del seq_length
  return 'taco', dict(num_negatives=config.num_negatives,
                      mlm_all_positions=config.mlm_positions == 'all')


def build_taco_pretrainer(config: model_configs.TacoConfig, seed=None):
  """Builds a `TacoPretrainer` from its config (the only reader of TacoConfig)."""
  validate_config(config)
  encoder = mlm_pretrainer.build_kept_encoder(config)
  return TacoPretrainer(
      encoder_network=encoder,
      tie_output_embeddings=config.tie_output_embeddings,
      window_size=config.window_size,
      num_negatives=config.num_negatives,
      tc_positions=config.tc_positions,
      mlm_positions=config.mlm_positions,
      stop_key_gradients=config.tc_stop_key_gradients,
      mlm_activation=config.encoder.hidden_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=config.encoder.initializer_range),
      seed=seed,
      name='taco_pretrainer')
