"""Encoder sizes, decoded from one table (TEAMS paper, Table 5 and §4.1).

Every objective in this project builds its encoders from Model Garden's `BertEncoderConfig`;
this module is the one place that says what "small", "base" and "large" mean. "tiny" and "mini"
are not from a paper: a 4-layer, 64-wide model for the CPU demo (deep enough that the generator
has two layers and shares one) and a 4-layer, 128-wide one for the learning benchmark.
"""

import dataclasses

from official.nlp.configs import encoders

# name: (layers, hidden, embedding, intermediate, heads). Table 5: attention head dim is 64
# for every paper size; small uses a factorised 128-wide embedding (§4.1).
_SIZES = {
    'tiny': (4, 64, 32, 256, 2),
    # Not from a paper: the learning benchmark's size, small enough to leave the frequency plateau
    # within minutes on 2 CPU cores (head dim 64 as Table 5; no factorised embedding).
    'mini': (4, 128, 128, 512, 2),
    'small': (12, 256, 128, 1024, 4),
    'base': (12, 768, 768, 3072, 12),
    'large': (24, 1024, 1024, 4096, 16),
    # TACO's small (its Table 5): fewer, wider layers than TEAMS' small.
    'taco_small': (4, 512, 512, 2048, 8),
}


def encoder_config(size, vocab_size=30522, max_position_embeddings=512):
  """Returns the `BertEncoderConfig` for a named size.

  Args:
    size: one of 'tiny', 'mini', 'small', 'base', 'large', 'taco_small'.
    vocab_size: WordPiece vocabulary size (BERT uncased: 30522).
    max_position_embeddings: longest sequence the position table supports.

  Returns:
    A BertEncoderConfig with Table 5's widths, dropout 0.1 and attention dropout 0.1.

  Raises:
    ValueError: unknown size.
  """
  if size not in _SIZES:
    raise ValueError(f'Unknown encoder size {size!r}; use one of {sorted(_SIZES)}.')
  num_layers, hidden, embedding, intermediate, heads = _SIZES[size]
  return encoders.BertEncoderConfig(
      vocab_size=vocab_size,
      hidden_size=hidden,
      num_layers=num_layers,
      num_attention_heads=heads,
      intermediate_size=intermediate,
      embedding_size=embedding,
      hidden_activation='gelu',
      dropout_rate=0.1,  # Table 5.
      attention_dropout_rate=0.1,  # Table 5.
      max_position_embeddings=max_position_embeddings,
      type_vocab_size=2,
      initializer_range=0.02)


@dataclasses.dataclass
class RelativePositionEncoderConfig(encoders.BertEncoderConfig):
  """A BERT encoder whose layers add a T5 relative position bias (COCO-LM §4), for fine-tuning.

  Used as `EncoderConfig(type='any', any=RelativePositionEncoderConfig(...))`, so Model Garden's
  fine-tuning tasks build it with `networks.shared_encoders.build_relative_position_encoder`
  (bound to this class) and restore a COCO-LM main Transformer from `init_checkpoint`. It also
  carries pre-LN encoders (`norm_first`) with their final LayerNorm, which Model Garden's
  `BertEncoderV2` lacks; with 0 buckets it has absolute positions only.

  Attributes:
    relative_position_num_buckets: relative-distance buckets, half per direction (COCO-LM's
      code and T5: 32); 0 for none.
    relative_position_max_distance: distances from here on share the last bucket (128).
    relative_position_bias_scale: the pretraining run's (the stored table times it is the bias).
  """
  relative_position_num_buckets: int = 32
  relative_position_max_distance: int = 128
  relative_position_bias_scale: float = 1.0
