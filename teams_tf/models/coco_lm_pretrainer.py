"""COCO-LM pretrainer: auxiliary MLM, corrective LM and sequence contrast (Meng et al., 2021, §3).

Data flow for one batch (shapes: B batch, T tokens, P masked slots, V vocab, H hidden):
  x^M --auxiliary (generator)--> MLM logits [B, P, V]            (L_MLM, dropout on)
  x^M --auxiliary, dropout off--> logits --sample--> X^MLM [B, T] (§3.3; no gradient)
  X^MLM --main (discriminator)--> h [B, T, H] --CLM head--> copy logits [B, T], LM logits [B, P, V]
  X^orig --crop 90%--> X^crop --main--> h_[CLS]; SCL contrasts it with X^MLM's h_[CLS]
The auxiliary Transformer is built with the same code as TEAMS/ELECTRA's generator (shared
embeddings, `build_generator_and_discriminator`) and samples with the same `CandidateSampler`;
only the heads, the crop and the losses are COCO-LM's. The main Transformer is kept.
"""

import math

import tensorflow as tf
import tf_keras

from official.modeling import tf_utils

from teams_tf.configs import models as model_configs
from teams_tf.layers import candidate_sampler
from teams_tf.layers import clm_head as clm_head_lib
from teams_tf.layers import mlm_head
from teams_tf.networks import shared_encoders
from teams_tf.ops import cropping
from teams_tf.ops import replica_random
from teams_tf.ops import token_sampling

_REPLACEMENTS = ('auxiliary', 'random')
_LM_POSITIONS = ('masked', 'all')


def max_crop_length(seq_length, fraction):
  """Longest X^crop of a T-token batch: [CLS] plus at most ceil(fraction·(T - 1)) tokens."""
  return min(seq_length, 1 + math.ceil(fraction * (seq_length - 1)))


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class CocoLmPretrainer(tf_keras.Model):
  """Auxiliary MLM + main Transformer with a CLM head and sequence contrastive learning.

  Inputs (dict): `input_word_ids` [B, T] int32 (x^M), `input_mask` [B, T] int32,
  `input_type_ids` [B, T] int32, `masked_lm_positions` [B, P] int32, `masked_lm_ids` [B, P]
  int32 (x^orig there), `masked_lm_weights` [B, P] float32 (0 for padded slots).

  Outputs (dict):
    `mlm_logits`: [B, P, V] float32 auxiliary logits (L_MLM); without an auxiliary model absent.
    `sampling_logits`: [B, P, V] float32 logits the replacements were drawn from (the dropout-
      free pass when training with `sample_without_dropout`); absent without an auxiliary model.
    `replaced_ids`: [B, P] int32 tokens of X^MLM at the masked positions (may equal x^orig).
    `copy_labels`: [B, T] float32, 1 where X^MLM_i = X^orig_i.
    `copy_logits`: [B, T] float32 w_copy^T h_i, log-odds of p_copy(1|h_i).
    `clm_logits`: [B, P', V] float32 LM logits; P' = P (masked positions) or T (all tokens);
      only with an LM output. `lm_target_ids` (x^orig), `lm_input_ids` (X^MLM),
      `lm_copy_logits` and `lm_weights` are [B, P'] at the same positions.
    `sequence_output`: [B, T, H] main Transformer output on X^MLM.
    `sequence_embedding`: [B, H] its h_[CLS], s of X^MLM in Eq. (3).
    `crop_sequence_embedding`: [B, H] h_[CLS] of X^crop; only with SCL.

  Gradients: the auxiliary model learns only from L_MLM (sampling is `tf.stop_gradient` and
  X^MLM enters the main Transformer as ids); L_CLM and L_SCL train the main Transformer, the
  CLM head and the shared embeddings (L_SCL through both views).
  """

  def __init__(self,
               discriminator_network,
               clm_head,
               generator_network=None,
               sample_without_dropout=True,
               lm_positions='masked',
               crop_fraction=0.9,
               with_scl=True,
               mlm_activation='gelu',
               mlm_initializer='glorot_uniform',
               tie_output_embeddings=True,
               seed=None,
               **kwargs):
    """Initializes the pretrainer.

    Args:
      discriminator_network: EncoderScaffold (dict outputs), the main Transformer.
      clm_head: a `CorrectiveLmHead` over the main Transformer's embedding table.
      generator_network: EncoderScaffold, the auxiliary Transformer sharing the main one's
        embeddings; None replaces masked tokens uniformly at random instead.
      sample_without_dropout: when training, sample from a second, dropout-free auxiliary pass.
      lm_positions: 'masked' or 'all'; where the LM logits are computed.
      crop_fraction: share of X^orig kept in X^crop.
      with_scl: run the main Transformer on X^crop and output its h_[CLS].
      mlm_activation: activation of the auxiliary MLM transform.
      mlm_initializer: initializer of the auxiliary MLM transform.
      tie_output_embeddings: the MLM output layer is the embedding table (else its own).
      seed: int base seed of the sampling and cropping stream (`replica_random.SeedStream`); None
        draws one. Its state is checkpointed, resumes, and is the same on every replica.
      **kwargs: Keras model arguments (`name`, ...).
    """
    super().__init__(**kwargs)
    if lm_positions not in _LM_POSITIONS:
      raise ValueError(f'lm_positions={lm_positions!r} must be one of {_LM_POSITIONS}.')
    self.generator_network = generator_network
    self.discriminator_network = discriminator_network
    self.clm_head = clm_head
    self._sample_without_dropout = sample_without_dropout
    self._lm_positions = lm_positions
    self._crop_fraction = crop_fraction
    self._with_scl = with_scl
    embedding_table = discriminator_network.get_embedding_table()
    self._vocab_size = embedding_table.shape[0]
    self.masked_lm = None
    if generator_network is not None:
      self.masked_lm = mlm_head.output_head(
          embedding_table, tie_output_embeddings,
          activation=tf_utils.get_activation(mlm_activation), initializer=mlm_initializer,
          name='generator_predictions')
      self.candidate_sampler = candidate_sampler.CandidateSampler(
          num_negatives=0, name='candidate_sampler')
    self._seeds = replica_random.SeedStream(seed, name='seed_stream')

  def _auxiliary_logits(self, word_ids, input_mask, type_ids, positions, training):
    outputs = self.generator_network([word_ids, input_mask, type_ids], training=training)
    return self.masked_lm(outputs['sequence_output'], positions)  # float32

  def call(self, inputs, training=None):
    """Corrupts, corrects and contrasts; see the class docstring."""
    word_ids = inputs['input_word_ids']
    input_mask = inputs['input_mask']
    type_ids = inputs['input_type_ids']
    positions = inputs['masked_lm_positions']
    original_ids = inputs['masked_lm_ids']
    weights = inputs['masked_lm_weights']
    sample_seed, crop_seed = tf.unstack(self._seeds.next(2))

    outputs = {}
    if self.generator_network is not None:
      mlm_logits = self._auxiliary_logits(word_ids, input_mask, type_ids, positions, training)
      sampling_logits = mlm_logits
      if training and self._sample_without_dropout:
        sampling_logits = self._auxiliary_logits(
            word_ids, input_mask, type_ids, positions, training=False)
      replaced_ids = self.candidate_sampler(
          sampling_logits, original_ids, seed=sample_seed)['replaced_ids']
      outputs.update(mlm_logits=mlm_logits, sampling_logits=tf.stop_gradient(sampling_logits))
    else:
      replaced_ids = token_sampling.uniform_token_ids(
          tf.shape(original_ids), self._vocab_size, sample_seed)
    original, corrupted = token_sampling.replace_masked_tokens(
        word_ids, positions, weights, original_ids, replaced_ids)
    outputs.update(replaced_ids=replaced_ids,
                   copy_labels=tf.cast(tf.equal(corrupted, original), tf.float32))

    main_outputs = self.discriminator_network([corrupted, input_mask, type_ids],
                                              training=training)
    sequence_output = main_outputs['sequence_output']
    if self._lm_positions == 'masked':
      head_outputs = self.clm_head(sequence_output, positions)
      outputs.update(lm_target_ids=tf.cast(original_ids, tf.int32),
                     lm_input_ids=tf.gather(corrupted, positions, batch_dims=1),
                     lm_copy_logits=tf.gather(head_outputs['copy_logits'], positions,
                                              batch_dims=1),
                     lm_weights=tf.cast(weights, tf.float32))
    else:
      head_outputs = self.clm_head(sequence_output)
      outputs.update(lm_target_ids=original, lm_input_ids=corrupted,
                     lm_copy_logits=head_outputs['copy_logits'],
                     lm_weights=tf.cast(input_mask, tf.float32))
    outputs.update(head_outputs)
    outputs.update(sequence_output=sequence_output, sequence_embedding=sequence_output[:, 0])

    if self._with_scl:
      crop = cropping.crop_sequences(original, input_mask, type_ids, self._crop_fraction,
                                     crop_seed)
      crop_inputs = [crop[key] for key in ('input_word_ids', 'input_mask', 'input_type_ids')]
      if word_ids.shape[1] is not None:
        # Crops are left-aligned: drop the columns no crop reaches (a static slice, so XLA
        # shapes stay fixed).
        length = max_crop_length(word_ids.shape[1], self._crop_fraction)
        crop_inputs = [values[:, :length] for values in crop_inputs]
      crop_outputs = self.discriminator_network(crop_inputs, training=training)
      outputs['crop_sequence_embedding'] = crop_outputs['sequence_output'][:, 0]
    return outputs

  @property
  def checkpoint_items(self):
    """Extra top-level checkpoint entries (Model Garden's trainer saves them beside `model`).

    `encoder` is the main Transformer: laid out as Model Garden's `BertEncoderV2` when it has
    its layout (`shared_encoders.has_bert_v2_layout`; fine-tune with `encoder.type: bert_v2`),
    else (relative positions, pre-LN's final LayerNorm) the encoder itself,
    which `shared_encoders.build_relative_position_encoder` rebuilds for fine-tuning.
    """
    if shared_encoders.has_bert_v2_layout(self.discriminator_network):
      return dict(encoder=shared_encoders.BertEncoderV2CheckpointView(
          self.discriminator_network))
    return dict(encoder=self.discriminator_network)

  def get_config(self):
    raise NotImplementedError(
        'CocoLmPretrainer shares embeddings between its networks and cannot be rebuilt from its '
        'config; use build_coco_lm_pretrainer(CocoLmConfig) and restore a checkpoint.')


def validate_config(config: model_configs.CocoLmConfig):
  """Checks a CocoLmConfig without building anything; tasks call it when they are created.

  Raises:
    ValueError: naming the field, the bad value and the valid range or fix.
  """
  if config.replacement not in _REPLACEMENTS:
    raise ValueError(f'replacement={config.replacement!r} must be one of {_REPLACEMENTS} '
                     "('auxiliary' = COCO-LM).")
  if config.replacement == 'auxiliary':
    # COCO-LM's auxiliary model: 4 layers for a 12-layer main Transformer, 6 for 24; no tied
    # layers.
    shared_encoders.check_encoder_pair(config.encoder, config.num_generator_layers, 0,
                                       config.generator_width_fraction)
  if config.replacement == 'random' and not config.tie_output_embeddings:
    raise ValueError("tie_output_embeddings=False with replacement='random': there is no "
                     'auxiliary MLM head to untie; leave it True.')
  shared_encoders.validate_relative_positions(
      model_configs.relative_position_buckets(config), config.relative_position_max_distance,
      config.relative_position_bias_scale)
  for field in ('copy_loss_weight', 'lm_loss_weight', 'scl_loss_weight'):
    if getattr(config, field) < 0:
      raise ValueError(f'{field}={getattr(config, field)} must be >= 0 (0 removes the term).')
  if not (config.copy_loss_weight or config.lm_loss_weight or config.scl_loss_weight):
    raise ValueError('copy_loss_weight, lm_loss_weight and scl_loss_weight are all 0: the main '
                     'Transformer would learn nothing (COCO-LM: 50, 1, 1).')
  if config.lm_positions not in _LM_POSITIONS:
    raise ValueError(f'lm_positions={config.lm_positions!r} must be one of {_LM_POSITIONS} '
                     "('masked' = COCO-LM, 'all' = All-Token MLM).")
  copy_trained_by_lm = (config.lm_loss_weight and config.copy_mechanism and
                        not config.clm_stop_gradient)
  if not config.copy_loss_weight and not copy_trained_by_lm:
    raise ValueError(
        'copy_loss_weight=0 leaves the copy probability untrained unless L_LM trains it: set '
        'copy_loss_weight > 0 (COCO-LM: 50), or lm_loss_weight > 0 with copy_mechanism=True '
        'and clm_stop_gradient=False (All-Token MLM).')
  if not 0.0 < config.crop_fraction <= 1.0:
    raise ValueError(f'crop_fraction={config.crop_fraction} must be in (0, 1] (COCO-LM: 0.9).')
  if config.scl_temperature <= 0:
    raise ValueError(f'scl_temperature={config.scl_temperature} must be > 0 (COCO-LM: 1).')


def flop_shapes(config: model_configs.CocoLmConfig, seq_length: int) -> tuple[str, dict]:
  """What `training.flops.step_flops` counts of COCO-LM beside B, T, P and the encoder.

  Returns:
    ('coco_lm', shapes): the auxiliary generator's BertEncoderConfig (None for random
    replacements), whether it samples without dropout, the CLM positions (None without CLM) and
    the crop length of the second view (0 without SCL).
  """
  generator = None
  if config.replacement == 'auxiliary':
    generator = shared_encoders.generator_encoder_config(config.encoder,
                                                         config.generator_width_fraction)
    generator.num_layers = config.num_generator_layers
  return 'coco_lm', dict(
      generator=generator, sample_without_dropout=config.sample_without_dropout,
      lm_positions=config.lm_positions if config.lm_loss_weight else None,
      crop_length=(max_crop_length(seq_length, config.crop_fraction)
                   if config.scl_loss_weight else 0))


def build_coco_lm_pretrainer(config: model_configs.CocoLmConfig, seed=None):
  """Builds a `CocoLmPretrainer` from its config (the only reader of CocoLmConfig).

  Args:
    config: a CocoLmConfig.
    seed: optional int seed for sampling and cropping (tests and reproducible runs).

  Returns:
    A CocoLmPretrainer.

  Raises:
    ValueError: an invalid field or combination, naming the field, the value and the fix.
  """
  validate_config(config)
  buckets = model_configs.relative_position_buckets(config)
  generator = None
  if config.replacement == 'auxiliary':
    generator, discriminator = shared_encoders.build_generator_and_discriminator(
        config.encoder, num_generator_layers=config.num_generator_layers, num_shared_layers=0,
        generator_width_fraction=config.generator_width_fraction,
        relative_position_num_buckets=buckets,
        relative_position_max_distance=config.relative_position_max_distance,
        relative_position_bias_scale=config.relative_position_bias_scale)
    generator.pooler_layer.trainable = False
  else:
    discriminator = shared_encoders.build_single_encoder(
        config.encoder, relative_position_num_buckets=buckets,
        relative_position_max_distance=config.relative_position_max_distance,
        relative_position_bias_scale=config.relative_position_bias_scale,
        name='discriminator')
  # SCL reads h_[CLS] itself (§3.3), so no loss reaches the pooler; keep it out of the optimizer.
  discriminator.pooler_layer.trainable = False
  initializer = tf_keras.initializers.TruncatedNormal(stddev=config.encoder.initializer_range)
  return CocoLmPretrainer(
      discriminator_network=discriminator,
      clm_head=clm_head_lib.CorrectiveLmHead(
          embedding_table=discriminator.get_embedding_table(), initializer=initializer,
          with_lm=config.lm_loss_weight > 0, name='clm_head'),
      generator_network=generator,
      sample_without_dropout=config.sample_without_dropout,
      lm_positions=config.lm_positions,
      crop_fraction=config.crop_fraction,
      with_scl=config.scl_loss_weight > 0,
      tie_output_embeddings=config.tie_output_embeddings,
      mlm_activation=config.encoder.hidden_activation,
      mlm_initializer=initializer,
      seed=seed,
      name='coco_lm_pretrainer')
