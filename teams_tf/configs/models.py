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
class TeamsConfig(base_config.Config):
  """TEAMS pretrainer (paper §3.2, Eq. 9).

  Attributes:
    encoder: the discriminator. The generator has the same width (hidden, intermediate,
      heads, embedding size) and tied embeddings (§3.2 "Partial Layer Sharing").
    generator_depth_fraction: generator layers / discriminator layers; must give a whole
      number of layers. Paper: 1/2 for every size (§4.1, Table 5).
    num_shared_layers: how many bottom generator layers are the discriminator's bottom
      layers (same variables). None = the bottom half of the generator (paper §3.2);
      0 = no tie; all generator layers = full tie.
    num_negatives: K, non-original candidates per masked position (paper: 5, §4.1).
    candidate_sampling: 'sampled' from P_G without replacement (paper §3.2) or 'hardest'
      (the K most likely non-original tokens; Figure 5).
    rtd_head_input_layer: 1-based discriminator layer whose output feeds the RTD task layer.
      None = L - 1 (paper §3.2).
    rtd_loss_weight: λ1 of Eq. (9) (paper: 5).
    mws_loss_weight: λ2 of Eq. (9) (paper: 2).
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('small'))
  generator_depth_fraction: float = 0.5
  num_shared_layers: Optional[int] = None
  num_negatives: int = 5
  candidate_sampling: str = 'sampled'
  rtd_head_input_layer: Optional[int] = None
  rtd_loss_weight: float = 5.0
  mws_loss_weight: float = 2.0


@dataclasses.dataclass
class MlmConfig(base_config.Config):
  """BERT baseline of the TEAMS paper: one encoder trained with MLM only (Table 1, Eq. 1).

  No next-sentence prediction. The masking policy (15%, 80/10/10 replacement) is a data setting
  (`PretrainDataConfig`); architecture and optimisation follow Table 5 as for TEAMS, so the
  comparison is compute-matched (§4.1).

  Attributes:
    encoder: the encoder that is trained and kept; its embedding table is tied to the MLM
      output layer (BERT).
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=lambda: encoder_sizes.encoder_config('small'))
