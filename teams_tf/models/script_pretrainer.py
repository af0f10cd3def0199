"""SCRIPT pretrainer: one encoder that is both the MLM and its own critic (Nijkamp et al., §2).

Data flow for one batch (shapes: B batch, T tokens, P masked slots, V vocab):
  pass 1: x̂ (masked) --encoder--> MaskedLM at the masked positions --> s [B, P, V]   (L_MLM)
          x̄_t ~ Gumbel-softmax(softmax(s_t), τ) at the masked positions              (Eq. 3)
  pass 2: x̄ --same encoder--> same head at every position --logsumexp_v s_tv--> log-odds of
          p(t+ | x̄) [B, T], the [B, T, V] scores never kept                         (Eq. 4-6)
There is no generator and no added parameter: the encoder is Model Garden's `BertEncoderV2`, the
head its `MaskedLM` (BERT's transform and the tied output embeddings) with a critic mode
(`SelfCriticMaskedLM`), both used by the two passes. The encoder is what is kept.
"""

import tensorflow as tf
import tf_keras

from teams_tf.configs import models as model_configs
from teams_tf.layers import self_critic_head
from teams_tf.models import mlm_pretrainer
from teams_tf.ops import token_sampling


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class ScriptPretrainer(mlm_pretrainer.SingleEncoderPretrainer):
  """MLM pass on x̂, Gumbel-softmax resampling, self-critic pass on x̄, with one set of weights.

  Inputs (dict): `input_word_ids` [B, T] int32 (x̂), `input_mask` [B, T] int32, `input_type_ids`
  [B, T] int32, `masked_lm_positions` [B, P] int32, `masked_lm_ids` [B, P] int32 (x there),
  `masked_lm_weights` [B, P] float32 (0 for padded slots).

  Outputs (dict):
    `mlm_logits`: [B, P, V] float32 pass-1 scores at the masked positions (Eq. 2).
    `replaced_ids`: [B, P] int32 x̄ at the masked positions (may equal x).
    `critic_labels`: [B, T] float32, 1 where x̄_t = x_t.
    `critic_log_odds`: [B, T] float32 pass-2 log-odds of p(t+ | x̄) (Eq. 4-5).
    `sequence_output`: [B, T, H] pass-2 encoder output.

  Gradients: both losses reach the encoder and the head (their weights are shared by the two
  passes). With the default hard sample, L_Disc does not reach pass 1 (x̄ enters pass 2 as ids);
  with `straight_through`, pass 2 embeds the replaced tokens as the straight-through one-hot
  times the embedding table, so L_Disc also flows back into pass 1's logits.
  """

  head_class = self_critic_head.SelfCriticMaskedLM

  def __init__(self, encoder_network, gumbel_temperature=1.0, straight_through=False, **kwargs):
    """Initializes the pretrainer.

    Args:
      encoder_network: a Model Garden `BertEncoderV2` (dict outputs).
      gumbel_temperature: τ of Eq. (3) (> 0).
      straight_through: see the class docstring.
      **kwargs: `SingleEncoderPretrainer` arguments (`mlm_activation`, `mlm_initializer`, `seed`
        of the sampling stream) and Keras model arguments (`name`, ...).
    """
    if gumbel_temperature <= 0:
      raise ValueError(f'gumbel_temperature={gumbel_temperature} must be > 0.')
    super().__init__(encoder_network, **kwargs)
    self._temperature = gumbel_temperature
    self._straight_through = straight_through

  def scores(self, inputs, positions, training=None):
    """Softmax-layer logits s_t [B, P, V] float32 at `positions` [B, P] of an encoder pass."""
    sequence_output = self.encoder_network(inputs, training=training)['sequence_output']
    return self.masked_lm(sequence_output, positions), sequence_output

  def critic_log_odds(self, inputs, training=None):
    """Self-critic log-odds of p(t+ | x) [B, T] float32 (Eq. 4-5) and the [B, T, H]
    encoder output."""
    sequence_output = self.encoder_network(inputs, training=training)['sequence_output']
    return self.masked_lm(sequence_output), sequence_output

  def call(self, inputs, training=None):
    """Runs both passes; see the class docstring."""
    word_ids = inputs['input_word_ids']
    encoder_inputs = dict(input_word_ids=word_ids, input_mask=inputs['input_mask'],
                          input_type_ids=inputs['input_type_ids'])
    positions = inputs['masked_lm_positions']
    original_ids = inputs['masked_lm_ids']
    weights = inputs['masked_lm_weights']

    mlm_logits, _ = self.scores(encoder_inputs, positions, training)
    replaced_ids, one_hot = token_sampling.gumbel_softmax_sample(
        mlm_logits, self._temperature, self._seeds.next()[0], self._straight_through)
    original, corrupted = token_sampling.replace_masked_tokens(
        word_ids, positions, weights, original_ids, replaced_ids)
    critic_inputs = dict(encoder_inputs, input_word_ids=corrupted)
    if self._straight_through:
      critic_inputs['input_word_embeddings'] = self._straight_through_embeddings(
          corrupted, positions, weights, one_hot)
    critic_log_odds, sequence_output = self.critic_log_odds(critic_inputs, training)
    return dict(
        mlm_logits=mlm_logits,
        replaced_ids=replaced_ids,
        critic_labels=tf.cast(tf.equal(corrupted, original), tf.float32),
        critic_log_odds=critic_log_odds,
        sequence_output=sequence_output)

  def _straight_through_embeddings(self, corrupted, positions, weights, one_hot):
    """[B, T, E] word embeddings of x̄ whose masked rows carry the one-hot's gradient."""
    table = self.encoder_network.get_embedding_table()
    # The embedding layer's output dtype: bfloat16 under mixed_bfloat16.
    dtype = self.encoder_network.get_embedding_layer().compute_dtype
    embeddings = tf.cast(tf.gather(table, corrupted), dtype)  # [B, T, E]
    sampled = tf.einsum('bpv,ve->bpe', one_hot, tf.cast(table, one_hot.dtype))  # [B, P, E]
    # Zero in the forward pass (the one-hot is exactly the sampled row); the soft sample's
    # gradient in the backward pass.
    delta = tf.cast(sampled - tf.stop_gradient(sampled), embeddings.dtype)
    batch_index = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, None], tf.shape(positions))
    keep = tf.cast(weights > 0, delta.dtype)[..., None]
    return embeddings + tf.scatter_nd(tf.stack([batch_index, positions], -1), delta * keep,
                                      tf.shape(embeddings))



def flop_shapes(config: model_configs.ScriptConfig, seq_length: int) -> tuple[str, dict]:
  """What `training.flops.step_flops` counts of SCRIPT beside B, T, P and the encoder: whether
  the sampled tokens pass straight-through (their second pass then receives gradients)."""
  del seq_length
  return 'script', dict(straight_through=config.straight_through)


def build_script_pretrainer(config: model_configs.ScriptConfig, seed=None):
  """Builds a `ScriptPretrainer` from its config (the only reader of ScriptConfig).

  Raises:
    ValueError: a non-positive temperature or negative loss weight, naming the field.
  """
  validate_config(config)
  encoder = mlm_pretrainer.build_kept_encoder(config)
  return ScriptPretrainer(
      encoder_network=encoder,
      mlm_activation=config.encoder.hidden_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=config.encoder.initializer_range),
      tie_output_embeddings=config.tie_output_embeddings,
      gumbel_temperature=config.gumbel_temperature,
      straight_through=config.straight_through,
      seed=seed,
      name='script_pretrainer')


def validate_config(config: model_configs.ScriptConfig):
  """Checks a ScriptConfig without building anything; raises ValueError naming the field."""
  if config.gumbel_temperature <= 0:
    raise ValueError(f'gumbel_temperature={config.gumbel_temperature} must be > 0 (τ of Eq. 3).')
  if config.discriminator_loss_weight < 0:
    raise ValueError(f'discriminator_loss_weight={config.discriminator_loss_weight} must be >= 0 '
                     '(α; SCRIPT: 50).')
  if config.straight_through and not model_configs.kept_as_bert_v2(config):
    raise ValueError(
        'straight_through=True feeds word embeddings into a BertEncoderV2, which has no relative '
        f'position bias (relative_position_bias={config.relative_position_bias}) and no final '
        f'LayerNorm (encoder.norm_first={config.encoder.norm_first}); set both to False or '
        'straight_through=False.')
