"""BERT baseline of the TEAMS paper: one encoder pretrained with masked LM only (Table 1, Eq. 1).

There is no next-sentence prediction and no second network. The model is Model Garden's own
`BertPretrainerV2` over Model Garden's `BertEncoderV2`, with the MLM head that Model Garden's
`MaskedLMTask` builds (BERT's transform: dense + activation + LayerNorm, then a dot product with
the tied input embedding table plus an output bias; `mlm_head.MaskedLM`, whose logits are float32
so that the bias gradient sums in float32 under mixed_bfloat16):

  x^M --BertEncoderV2 (L layers)--> h [B, T, H] --MaskedLM at masked_lm_positions--> [B, P, V]

Because the encoder *is* a `BertEncoderV2`, its checkpoint entry `encoder` (from
`BertPretrainerV2.checkpoint_items`) restores directly into fine-tuning tasks built with
`encoder.type: bert_v2` and `init_checkpoint`, like the kept TEAMS discriminator.
"""

import tf_keras

from official.modeling import tf_utils
from official.nlp.configs import encoders
from official.nlp.modeling import models

from teams_tf.configs import models as model_configs
from teams_tf.layers import mlm_head
from teams_tf.networks import encoder_embeddings
from teams_tf.networks import shared_encoders
from teams_tf.ops import replica_random


def flop_shapes(config: model_configs.MlmConfig, seq_length: int) -> tuple[str, dict]:
  """What `training.flops.step_flops` counts of BERT beside B, T, P and the encoder: nothing."""
  del config, seq_length
  return 'bert', {}


def build_mlm_pretrainer(config: model_configs.MlmConfig) -> models.BertPretrainerV2:
  """Builds the BERT-MLM pretrainer from its config (the only reader of MlmConfig).

  Args:
    config: an MlmConfig.

  Returns:
    A Model Garden `BertPretrainerV2` named 'mlm_pretrainer'. Inputs (dict): `input_word_ids`
    [B, T] int32 (x^M), `input_mask` [B, T] int32, `input_type_ids` [B, T] int32,
    `masked_lm_positions` [B, P] int32 (other keys are ignored). Outputs (dict):
      `mlm_logits`: [B, P, V] float32 scores over the vocabulary (Eq. 2 before the softmax).
      `sequence_output`: [B, T, H] last-layer output (the kept representation).
      `pooled_output`: [B, H] Model Garden's [CLS] pooler output (read by no loss).
      `encoder_outputs`: list of L tensors [B, T, H], one per layer.
    Everything is differentiable; the MLM loss reaches every encoder layer and the embedding
    table (through the input embeddings, and the output layer unless `tie_output_embeddings` is
    False).
  """
  encoder = build_kept_encoder(config)
  encoder(encoder.inputs)  # Creates the embedding table the head ties to.
  # Model Garden's MaskedLMTask head: the encoder's activation (BERT's `hidden_act`) and a
  # truncated normal with the encoder's initializer range; float32 logits (`mlm_head`).
  return models.BertPretrainerV2(
      encoder_network=encoder,
      customized_masked_lm=mlm_head.output_head(
          encoder.get_embedding_table(), config.tie_output_embeddings,
          activation=tf_utils.get_activation(config.encoder.hidden_activation),
          initializer=tf_keras.initializers.TruncatedNormal(
              stddev=config.encoder.initializer_range),
          name='cls/predictions'),
      name='mlm_pretrainer')


def build_kept_encoder(config):
  """The encoder the one-encoder objectives (BERT, SCRIPT, TACO) train and keep.

  When `model_configs.kept_as_bert_v2` (absolute positions, post-LN), Model Garden's
  `BertEncoderV2` whose embedding projection is `encoder_embeddings.embedding_projection` (the same
  variables, a gradient without the [B, T, E, H] broadcast of Model Garden's '...x,xy->...y'); it
  fine-tunes as `bert_v2`. Otherwise (a relative position bias, or pre-LN blocks with their final
  LayerNorm) `shared_encoders.build_single_encoder`'s encoder, which fine-tunes as
  `configs.encoders.RelativePositionEncoderConfig`.

  No pretraining loss reads the pooled [CLS] output (there is no next-sentence task), so the
  pooler stays out of the optimizer instead of being reported as variables without gradients.
  It is still checkpointed, so fine-tuning restores the full encoder.

  Args:
    config: a pretrainer config with `encoder` (BertEncoderConfig) and the
      `model_configs.RelativePositions` fields.

  Raises:
    ValueError: invalid relative position settings, naming the field.
  """
  buckets = model_configs.relative_position_buckets(config)
  shared_encoders.validate_relative_positions(buckets, config.relative_position_max_distance,
                                              config.relative_position_bias_scale)
  if not model_configs.kept_as_bert_v2(config):
    encoder = shared_encoders.build_single_encoder(
        config.encoder, relative_position_num_buckets=buckets,
        relative_position_max_distance=config.relative_position_max_distance,
        relative_position_bias_scale=config.relative_position_bias_scale)
  else:
    encoder = encoder_embeddings.use_rank3_embedding_projection(
        encoders.build_encoder(encoders.EncoderConfig(type='bert_v2', bert_v2=config.encoder)))
  encoder.pooler_layer.trainable = False
  return encoder


class SingleEncoderPretrainer(tf_keras.Model):
  """Base of the objectives that train one `BertEncoderV2` with BERT's MLM head (SCRIPT, TACO).

  Holds `encoder_network`, `masked_lm` (`mlm_head.MaskedLM`: BERT's transform and the tied
  input embedding table) and `_seeds`, the objective's sampling stream; subclasses write `call`
  and may give the head a `MaskedLM` subclass (`head_class`).
  """

  head_class = mlm_head.MaskedLM

  def __init__(self, encoder_network, mlm_activation='gelu', mlm_initializer='glorot_uniform',
               tie_output_embeddings=True, seed=None, **kwargs):
    """Initializes the encoder, the head and the sampling stream.

    Args:
      encoder_network: a Model Garden `BertEncoderV2` (dict outputs).
      mlm_activation: activation of the MLM transform.
      mlm_initializer: initializer of the MLM transform.
      tie_output_embeddings: the MLM output layer is the embedding table (else its own).
      seed: int base seed of the sampling stream (`replica_random.SeedStream`); None
        draws one. Its state is checkpointed, resumes, and is the same on every replica.
      **kwargs: Keras model arguments (`name`, ...).
    """
    super().__init__(**kwargs)
    self.encoder_network = encoder_network
    # BertEncoderV2 creates its embedding table when first called on its symbolic inputs.
    encoder_network(encoder_network.inputs)
    self.masked_lm = mlm_head.output_head(
        encoder_network.get_embedding_table(), tie_output_embeddings,
        activation=tf_utils.get_activation(mlm_activation), initializer=mlm_initializer,
        name='cls/predictions', head_class=self.head_class)
    self._seeds = replica_random.SeedStream(seed, name='seed_stream')

  @property
  def checkpoint_items(self):
    """`encoder`: the kept Model Garden `BertEncoderV2` (fine-tune with `encoder.type: bert_v2`)."""
    return dict(encoder=self.encoder_network)

  def get_config(self):
    raise NotImplementedError(
        f'{type(self).__name__} ties its MLM head to the encoder embeddings and cannot be rebuilt '
        'from its config; build it from its experiment config and restore a checkpoint.')
