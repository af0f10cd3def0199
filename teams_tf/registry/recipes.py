"""Pretraining recipes by size: the papers' settings and the low-budget ones, with their lines.

A recipe is an encoder size with its optimisation, batch, sequence length and (at the low-budget
sizes) masking. `registry/experiments.py` builds every objective at every recipe; the one-line
description of each size (`size_description`) is written from the recipe's own fields.
"""

import functools
import typing

from teams_tf.configs import encoders
from teams_tf.data import embedded
from teams_tf.data import tokenization

# TEAMS Table 5 optimisation values per size: (learning rate, batch size, train steps).
_TABLE5_OPTIMIZATION = {
    'small': (5e-4, 256, 500_000),
    'base': (2e-4, 256, 1_000_000),
    'large': (2e-4, 2048, 1_760_000),
}
_TABLE5_WARMUP_STEPS = 10_000
# TEAMS §4.1 and BERT: 15% of the tokens masked, 80/10/10 replacement (BERT Appendix B).
PAPER_MASK_RATE = 0.15


class PaperSettings(typing.NamedTuple):
  """A paper's pretraining settings at one size."""
  encoder_size: str
  learning_rate: float
  batch_size: int
  train_steps: int
  seq_length: int
  warmup_steps: int = _TABLE5_WARMUP_STEPS
  adam_epsilon: float = 1e-6


# Papers that set their own architecture or optimisation, at the sizes they report.
#   SCRIPT Appendix Table 4 (steps: Table 2's caption); ELECTRA's setup otherwise, whose small
#   model trains on 128-token sequences (SCRIPT §3.1 retrains small at 512 only for SQuAD).
#   TACO Table 5: small is 4 layers of width 512; 256-token sequences; Adam ε 1e-8.
_OWN_SETTINGS = {
    'script': {'small': PaperSettings('small', 5e-4, 128, 1_000_000, 128),
               'base': PaperSettings('base', 2e-4, 256, 766_000, 512)},
    'taco': {'small': PaperSettings('taco_small', 1e-4, 1280, 250_000, 256, 2_500, 1e-8),
             'base': PaperSettings('base', 1e-4, 1280, 500_000, 256, 10_000, 1e-8)},
}


class LowBudgetRecipe(typing.NamedTuple):
  """What a small encoder needs to leave the frequency plateau on 2 CPU cores.

  The same knobs for every objective, so that runs of one size stay comparable. Departures from
  the papers (all of them BERT/ELECTRA defaults otherwise): `mask_rate` of the tokens masked in
  training (Wettig et al. 2022, "Should You Mask 15% in Masked Language Modeling?"; evaluation
  keeps `eval_mask_rate`), pre-LN blocks (`norm_first`, with the final LayerNorm every pre-LN
  encoder here ends in) and no dropout (Geiping & Goldstein 2022, "Cramming"), short sequences,
  a large peak learning rate with linear warmup and decay (Izsak et al. 2021), and a T5 relative
  position bias in every encoder (COCO-LM §4) read at `relative_position_bias_scale` times its
  stored table, which makes it learn that many times faster under Adam.
  """
  purpose: str
  encoder_size: str
  mask_rate: float
  eval_mask_rate: float
  seq_length: int
  batch_size: int
  learning_rate: float
  warmup_steps: int
  train_steps: int
  relative_position_bias_scale: float
  trainer_overrides: dict
  adam_epsilon: float = 1e-6


# `*_mini`, the learning benchmark: 4 layers, H 128. With 15% masking every variant tried stayed
# on the plateau for 2,500 steps; with 40% and absolute positions only a BERT left it after about
# 2,000 steps, with the bias after about 600; the bias scale of 10 gave 24.3% held-out MLM
# accuracy at step 800 against 18.0% (teams_lab/RECIPE_NOTES.md).
_MINI = LowBudgetRecipe(
    purpose='the learning benchmark',
    encoder_size='mini', mask_rate=0.4, eval_mask_rate=0.15, seq_length=64, batch_size=64,
    learning_rate=2e-3, warmup_steps=300, train_steps=10_000, relative_position_bias_scale=10.0,
    trainer_overrides=dict(steps_per_loop=100, summary_interval=100, checkpoint_interval=500,
                           validation_interval=500, validation_steps=50, max_to_keep=2))
# `*_demo`, the README's first command: 4 layers, H 64, under 3 minutes of training on 2 cores.
# The bias scale of 10 halved the steps a demo-size encoder needs to leave the plateau; 5e-3 and
# 1e-3 peak learning rates were slower than 3e-3. At 800 steps the TEAMS discriminator ended at
# what token identity gives and one run of two left the generator on the plateau; at 1,400 every
# run passed all three context-free baselines (teams_lab/RECIPE_NOTES.md).
_DEMO = LowBudgetRecipe(
    purpose="the README's first run, 3 minutes",
    encoder_size='tiny', mask_rate=0.4, eval_mask_rate=0.15, seq_length=64, batch_size=32,
    learning_rate=3e-3, warmup_steps=175, train_steps=1400, relative_position_bias_scale=10.0,
    trainer_overrides=dict(steps_per_loop=50, summary_interval=50, checkpoint_interval=200,
                           validation_interval=400, validation_steps=-1, max_to_keep=3))
LOW_BUDGET_RECIPES = {'demo': _DEMO, 'mini': _MINI}
# Registered for every objective; their fine-tuning builds the runs' own encoder.
LOW_BUDGET_SIZES = tuple(LOW_BUDGET_RECIPES)
# Every size, in the order they are listed.
SIZES = (*_TABLE5_OPTIMIZATION, *LOW_BUDGET_SIZES)


@functools.cache  # The embedded vocabulary is read once, not once per experiment built.
def sample_vocab_size() -> int:
  """Size of the embedded sample vocabulary, the default of every experiment."""
  return tokenization.load_vocabulary(embedded.resolve_path('sample:vocab')).size


def paper_sizes(paper: str) -> tuple[str, ...]:
  """The paper sizes `paper` reports: its own (SCRIPT, TACO), or every Table 5 size."""
  return tuple(_OWN_SETTINGS.get(paper, _TABLE5_OPTIMIZATION))


def paper_settings(paper: str, size: str) -> PaperSettings:
  """The settings of `paper` at a paper size: its own, or Table 5's (sequence length 512)."""
  if paper in _OWN_SETTINGS:
    return _OWN_SETTINGS[paper][size]
  return PaperSettings(size, *_TABLE5_OPTIMIZATION[size], seq_length=512)


def max_predictions(mask_rate: float, seq_length: int) -> int:
  """P for a low-budget mask rate: every masked token of a full sequence (no [CLS], [SEP])."""
  return round(mask_rate * (seq_length - 2))


def low_budget_encoder_config(size: str):
  """The `*_demo` or `*_mini` runs' encoder: pre-LN, no dropout, the sample vocabulary.

  Its width is also its embedding width (no factorised embedding) and it has as many positions
  as the recipe's sequences. Every objective at these sizes also adds a relative position bias
  (`relative_position_bias`, a model field) but for COCO-LM's "w/o. Rel-Pos" ablation.

  Args:
    size: 'demo' or 'mini'.
  """
  recipe = LOW_BUDGET_RECIPES[size]
  encoder = encoders.encoder_config(recipe.encoder_size, vocab_size=sample_vocab_size(),
                                    max_position_embeddings=recipe.seq_length)
  encoder.embedding_size = encoder.hidden_size
  encoder.norm_first = True
  encoder.dropout_rate = encoder.attention_dropout_rate = 0.0
  return encoder


def low_budget_mask_rate(size: str) -> float:
  """The training mask rate of the `*_demo` or `*_mini` runs."""
  return LOW_BUDGET_RECIPES[size].mask_rate


def relative_position_bias_scale(size: str) -> float:
  """The relative position bias scale of the `*_demo` or `*_mini` runs (fine-tuning keeps it)."""
  return LOW_BUDGET_RECIPES[size].relative_position_bias_scale


def _steps(count: int) -> str:
  """500000 -> '500k', 1760000 -> '1.76M', 1400 -> '1,400'."""
  if count >= 1_000_000:
    return f'{count / 1e6:g}M'
  return f'{count // 1000}k' if count >= 10_000 and not count % 1000 else f'{count:,}'


def _architecture(encoder) -> str:
  embedding = (f', E {encoder.embedding_size}'
               if encoder.embedding_size not in (None, encoder.hidden_size) else '')
  return f'{encoder.num_layers} layers, H {encoder.hidden_size}{embedding}'


def _rate(value: float) -> str:
  """0.0005 -> '5e-4', as the papers write learning rates."""
  return f'{value:.0e}'.replace('e-0', 'e-')


def size_description(paper: str, size: str) -> str:
  """One line for `size` as `paper` runs it, from the recipe's fields."""
  if size in LOW_BUDGET_RECIPES:
    r = LOW_BUDGET_RECIPES[size]
    return (f'{size}, {r.purpose} ({_architecture(low_budget_encoder_config(size))}, pre-LN, '
            f'no dropout, relative positions at {r.relative_position_bias_scale:g}x; '
            f'{r.mask_rate:.0%} masking, T {r.seq_length}, batch {r.batch_size}, lr '
            f'{_rate(r.learning_rate)}, {_steps(r.train_steps)} steps)')
  s = paper_settings(paper, size)
  architecture = _architecture(encoders.encoder_config(s.encoder_size))
  optimisation = f'lr {_rate(s.learning_rate)}, batch {s.batch_size}, {_steps(s.train_steps)} steps'
  if paper in _OWN_SETTINGS:
    return f'{size} of its paper ({architecture}; {optimisation}, T={s.seq_length})'
  return f'{size}, Table 5 ({architecture}; {optimisation})'
