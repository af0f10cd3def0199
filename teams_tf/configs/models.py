"""Pretrainer configurations: paper-level knobs only (see STYLE.md §4).

Layer-level details the papers do not fix (LayerNorm epsilons, ...) are gin bindings on the
layers; everything here is set by experiment YAML or `--params_override`.
"""

import dataclasses
from typing import Optional

from official.modeling.hyperparams import base_config
from official.nlp.configs import encoders

from teams_tf.configs import encoders as encoder_sizes


@dataclasses.dataclass
class RelativePositions(base_config.Config):
  """Position fields every pretrainer config has: absolute positions, or plus a T5 bias.

  Attributes:
    relative_position_bias: add a T5 relative position bias (Raffel et al. 2020), one table of
      [buckets, heads] per encoder shared by its layers, to every encoder layer's attention
      beside the absolute position embeddings (task layers, e.g. TEAMS' attention RTD head, keep
      absolute positions only) (COCO-LM §4; the mini recipe of `registry/experiments.py`,
      where it takes a 4-layer encoder off the frequency plateau in a third of the steps).
      Generator layers that are discriminator layers (TEAMS §3.2) share its table.
    relative_position_num_buckets: relative-distance buckets, half per direction (COCO-LM's
      code and T5: 32).
    relative_position_max_distance: distance beyond which positions share a bucket (128).
    relative_position_bias_scale: the bias is this times its stored table, so under Adam it
      learns this many times faster and starts the same
      (`layers.relative_position_attention.ScaledRelativePositionBias`); 1 as in T5 and COCO-LM.
      No registered recipe sets it yet; the demo-size trials are in
      teams_lab/RECIPE_NOTES.md.
  """
  relative_position_bias: bool = False
  relative_position_num_buckets: int = 32
  relative_position_max_distance: int = 128
  relative_position_bias_scale: float = 1.0


def relative_position_buckets(config: RelativePositions) -> int:
  """The encoders' number of bias buckets: 0 for absolute positions only."""
  return config.relative_position_num_buckets if config.relative_position_bias else 0


def kept_as_bert_v2(config) -> bool:
  """Whether a pretrainer's kept encoder is saved in Model Garden's `BertEncoderV2` layout.

  Not with a relative position bias, nor with pre-LN blocks (`encoder.norm_first`), whose
  encoders end in a final LayerNorm (`networks.shared_encoders.build_encoder`); BertEncoderV2 has
  neither, so those encoders fine-tune as `configs.encoders.RelativePositionEncoderConfig`.
  """
  return not config.relative_position_bias and not config.encoder.norm_first


@dataclasses.dataclass
class TeamsConfig(RelativePositions):
  """Generator + discriminator pretrainer: TEAMS (§3.2, Eq. 9) and, as configurations, ELECTRA.

  Defaults are TEAMS. ELECTRA (Eq. 1 + Eq. 4) is `mws_loss_weight=0`, `rtd_head_type='ffn'`,
  `rtd_loss_weight=50`, a full-depth generator of ELECTRA's width and `num_shared_layers=0`
  (see `registry/experiments.py`); "Only MWS" (Table 2) is `rtd_loss_weight=0`.

  Attributes:
    encoder: the discriminator. The generator has its depth and width set below and tied
      embeddings (word, position, type and their LayerNorm; ELECTRA §3.2), each encoder
      projecting them to its own width.
    num_generator_layers: generator depth in [1, L]. None = L / 2 (Table 5, "Generator Size
      1/2"; Figure 4 varies it).
    generator_width_fraction: generator hidden size, intermediate size and heads as a fraction
      of the discriminator's (TEAMS: 1, §3.2; ELECTRA Table 6: 1/4 small, 1/3 base, 1/4 large).
    num_shared_layers: how many bottom generator layers are the discriminator's bottom
      layers (same variables). None = the bottom half of the generator (paper §3.2);
      0 = no tie; all generator layers = full tie (Table 4). Needs a full-width generator.
    num_negatives: K, non-original candidates per masked position (paper: 5, §4.1; Figure 5
      varies it from 1 to 50). Unused when `mws_loss_weight` is 0.
    candidate_sampling: 'sampled' from P_G without replacement (paper §3.2) or 'hardest'
      (the K most likely non-original tokens; Figure 5).
    rtd_head_type: 'attention', one extra transformer layer (§3.2), or 'ffn', a per-token
      dense layer (ELECTRA's head; Table 3 "Use FFN task heads").
    rtd_head_input_layer: 1-based discriminator layer whose output feeds the RTD head.
      None = L - 1 for the attention head (§3.2), L for the FFN head (ELECTRA, Table 3).
    mws_task_layer: add one transformer layer between layer L and the MWS head, so both tasks
      get a task layer on top of layer L (Table 3 "Add task head on 12th layer"; with
      `rtd_head_input_layer` = L). The kept encoder then has L + 1 layers.
    exported_representation: which stack becomes the kept encoder: 'top' = layers 1..L (plus
      the MWS task layer if any), the MWS representations in TEAMS (footnote 3); 'rtd_task_layer'
      = layers 1..`rtd_head_input_layer` plus the attention RTD task layer (Table 3 "Use RTD
      task head outputs").
    rtd_loss_weight: λ1 of Eq. (9) (TEAMS: 5; ELECTRA's λ: 50). 0 disables RTD: no RTD head is
      built (Table 2 "Only MWS").
    mws_loss_weight: λ2 of Eq. (9) (TEAMS: 2). 0 disables MWS: no candidate sets and no MWS
      head (ELECTRA; Table 2 "Only RTD").
    tie_output_embeddings: the MLM output layer (the generator's) is the input embedding table
      (ELECTRA §3.2, TEAMS; default) or, False, a table of its own (low-budget recipes, Geiping &
      Goldstein 2022).
    corruption_fraction: share of the generator's masked positions, drawn independently per
      position and step, whose sample x̂ enters the discriminator's input x^R; the others get
      their original token back, so RTD labels them original and MWS does not select there.
      Training only: evaluation corrupts every masked position, so that held-out RTD and MWS
      metrics compare across runs.
      1 = the papers (ELECTRA Eq. 1, TEAMS §3.2: x^R has x̂ at every masked position). Below 1
      it sets the discriminator's corruption apart from the generator's masking rate, a
      departure from the papers: with the mini recipe's 40% masking, 0.375 corrupts 15% of the
      tokens as ELECTRA's 15% masking does (teams_lab/RECIPE_NOTES.md).
    rtd_loss_positions: where the RTD loss (Eq. 4) is averaged: 'all' = every non-padding token
      (ELECTRA §2, TEAMS Eq. 4; default) or 'text' = the text's own tokens, leaving out [CLS] and
      [SEP] (ids from `train_data.vocab_file`). Those are never replaced, so under 'all' RTD only
      teaches them the constant answer "original", and [CLS] is where Model Garden's sentence
      classifier reads (teams_lab/RECIPE_NOTES.md). 'text' is a departure from the papers.
      The RTD metrics (accuracy, AUC and its context-free baseline) are over the same positions:
      a 'text' model's outputs at [CLS] and [SEP] are untrained and would rank arbitrarily.
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('small'))
  num_generator_layers: Optional[int] = None
  generator_width_fraction: float = 1.0
  num_shared_layers: Optional[int] = None
  num_negatives: int = 5
  candidate_sampling: str = 'sampled'
  rtd_head_type: str = 'attention'
  rtd_head_input_layer: Optional[int] = None
  mws_task_layer: bool = False
  exported_representation: str = 'top'
  rtd_loss_weight: float = 5.0
  mws_loss_weight: float = 2.0
  tie_output_embeddings: bool = True
  corruption_fraction: float = 1.0
  rtd_loss_positions: str = 'all'


@dataclasses.dataclass
class MlmConfig(RelativePositions):
  """BERT baseline of the TEAMS paper: one encoder trained with MLM only (Table 1, Eq. 1).

  No next-sentence prediction. The masking policy (15%, 80/10/10 replacement) is a data setting
  (`PretrainDataConfig`); architecture and optimisation follow Table 5 as for TEAMS, so the
  comparison is compute-matched (§4.1).

  Attributes:
    encoder: the encoder that is trained and kept.
    tie_output_embeddings: the MLM output layer is the input embedding table (BERT; default) or,
      False, a table of its own (low-budget recipes, Geiping & Goldstein 2022).
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('small'))
  tie_output_embeddings: bool = True

@dataclasses.dataclass
class CocoLmConfig(RelativePositions):
  """COCO-LM (Meng et al., 2021): auxiliary MLM + main CLM + SCL, L = L_MLM + L_CLM + L_SCL (Eq. 4).

  Defaults are the paper's COCO-LM; each Table 3 ablation changes one or two fields (see
  `registry/experiments.py`). The auxiliary Transformer is this project's generator and the
  main Transformer its discriminator: they share the token, position and type embeddings and
  their LayerNorm (as in ELECTRA and the authors' code), not transformer layers.

  Attributes:
    encoder: the main Transformer (the encoder that is kept).
    num_generator_layers: auxiliary depth in [1, L] (§4: 4 layers for a 12-layer main model,
      6 for 24; ELECTRA's auxiliary in Table 3: L).
    generator_width_fraction: auxiliary hidden size, FFN size and heads as a fraction of the
      main model's (COCO-LM: 1, the same hidden size; ELECTRA's auxiliary: 1/3 for base).
    sample_without_dropout: sample the replacements from a second auxiliary forward pass
      with dropout off (§3.3 "we disable dropout in it when sampling replacement tokens");
      the MLM loss uses the usual pass with dropout. False samples from that training pass, as
      ELECTRA does.
    replacement: 'auxiliary' samples X^MLM from the auxiliary MLM (COCO-LM); 'random' replaces
      the masked tokens uniformly at random and builds no auxiliary model (Table 3 "w. Random
      Replacements").
    relative_position_bias: as in `RelativePositions`; True here (§4, the authors' code; Table 3
      "w/o. Rel-Pos" sets False).
    copy_loss_weight: λ_copy of Eq. (2), weight of the copy (RTD) loss on all tokens. The
      paper does not print it; 50 is the authors' code default (`binary_loss_weight`), as in
      ELECTRA. 0 removes the copy loss (the copy probability is then trained only through L_LM,
      ELECTRA's All-Token MLM).
    lm_loss_weight: weight of L_LM in L_CLM (Eq. 2: 1). 0 removes the language-model output of
      the CLM head (Table 3 "RTD Only" and "SCL + RTD").
    lm_positions: 'masked', L_LM on the masked positions (Eq. 2), or 'all', on every token
      (Table 3 "All-Token LM Only", with copy_loss_weight 0 and clm_stop_gradient False).
    copy_mechanism: p_LM mixes in the copy probability (Eq. 2); False is the plain softmax
      (Table 3 "CLM w/o. Copy").
    clm_stop_gradient: stop the gradient of L_LM into p_copy (Eq. 2's sg; Table 3 "CLM w/o.
      Stop-grad" sets False).
    scl_loss_weight: weight of L_SCL in Eq. (4) (1). 0 removes SCL and the cropped view (Table 3
      "RTD Only", "CLM Only").
    crop_fraction: share of X^orig's tokens kept in X^crop (§3.3: 90%; Figure 4 varies it).
    scl_temperature: τ of Eq. (3) (§3.3: 1).
    tie_output_embeddings: the MLM output layer of the auxiliary model is the input embedding table
      (ELECTRA, COCO-LM; default) or, False, a table of its own (low-budget recipes, Geiping &
      Goldstein 2022).
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('base'))
  num_generator_layers: int = 4
  generator_width_fraction: float = 1.0
  sample_without_dropout: bool = True
  replacement: str = 'auxiliary'
  relative_position_bias: bool = True
  copy_loss_weight: float = 50.0
  lm_loss_weight: float = 1.0
  lm_positions: str = 'masked'
  copy_mechanism: bool = True
  clm_stop_gradient: bool = True
  scl_loss_weight: float = 1.0
  crop_fraction: float = 0.9
  scl_temperature: float = 1.0
  tie_output_embeddings: bool = True


@dataclasses.dataclass
class ScriptConfig(RelativePositions):
  """SCRIPT (Nijkamp et al., 2021): one encoder trained by MLM and as its own critic.

  L = L_MLM + α·L_Disc (§2). No generator and no parameters beyond BERT's encoder and MLM head.

  Attributes:
    encoder: the encoder (kept); its embedding table is tied to the MLM softmax layer W.
    discriminator_loss_weight: α (Appendix 4.1: 50).
    gumbel_temperature: τ of Eq. (3). The paper gives no value. The default hard sample is
      argmax of (log π + g)/τ, which follows π = p_θ(x_t | x̂) exactly for every τ, so τ only
      matters with `straight_through`; 1 is the plain Gumbel-softmax.
    straight_through: the paper does not say whether gradients pass through the sample. False
      (default): a hard sample with no gradient into pass 1, as ELECTRA's generator sampling.
      True: the straight-through Gumbel-softmax (Jang et al., 2016): forward with the hard
      sample, backward through softmax((log π + g)/τ) into pass 1.
    tie_output_embeddings: the MLM output layer W (also the critic's) is the input embedding table
      (SCRIPT §2; default) or, False, a table of its own (low-budget recipes, Geiping & Goldstein
      2022).
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('small'))
  discriminator_loss_weight: float = 50.0
  gumbel_temperature: float = 1.0
  straight_through: bool = False
  tie_output_embeddings: bool = True


@dataclasses.dataclass
class TacoConfig(RelativePositions):
  """TACO (Su et al., 2022): MLM + token-alignment contrastive loss, L = L_TC + L_MLM (Eq. 11).

  One encoder and one forward pass; the TC loss reads the global semantics g = h - e of every
  token (Eq. 3, 9, 10): the last-layer output minus its "static embedding", which TACO's
  released code takes to be the embedding layer's output (the input of the first layer, at the
  hidden width; `encoder_embeddings.embedding_output`).

  Attributes:
    encoder: the encoder (kept); its embedding table is tied to the MLM output layer.
    tc_loss_weight: weight of L_TC (Eq. 11: 1).
    window_size: W, positives within W positions of the token (§4: 5).
    num_negatives: K negatives per token from other sequences (§4: 50).
    temperature: τ of Eq. (7) (§4: 0.07).
    tc_positions: 'all' tokens (TACO, Eq. 8) or only the 'masked' ones (§5.2 "concentrated
      TACO").
    mlm_positions: 'masked' (MLM) or 'all', predicting the original token at every position
      (§5.2 "MLM+TP").
    tie_output_embeddings: the MLM output layer is the input embedding table (BERT, TACO; default)
      or, False, a table of its own (low-budget recipes, Geiping & Goldstein 2022).
    tc_stop_key_gradients: L_TC trains through the anchors only, not through their positives and
      negatives (TACO's released code, MoCo-style; the paper does not say).
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('base'))
  tc_loss_weight: float = 1.0
  window_size: int = 5
  num_negatives: int = 50
  temperature: float = 0.07
  tc_positions: str = 'all'
  mlm_positions: str = 'masked'
  tie_output_embeddings: bool = True
  tc_stop_key_gradients: bool = True
