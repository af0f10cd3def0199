"""Registered pretraining experiments (`exp_factory` names) with the TEAMS paper's settings.

Every experiment is `<objective>_<size>[_<variant>]`, built by `pretraining_experiment`:
  objectives: `teams` (Eq. 9), `electra` (RTD only, ELECTRA's λ = 50 and generator width),
    `bert` (MLM only) and `mws` (TEAMS without RTD) — the baselines of TEAMS Tables 1 and 2 —,
    `coco_lm` (COCO-LM Eq. 4) and `script` (SCRIPT §2, at the sizes and settings of its
    Table 4);
  sizes: `small`, `base`, `large` follow Table 5 (architecture, optimiser, batch size, steps;
    sequence length 512, §4.1) for every objective, so runs of one size are compute-matched;
    `demo` (3 minutes on a laptop CPU) and `mini` (the learning benchmark) are small encoders
    on the embedded sample with one low-budget recipe for every objective (`_LowBudgetRecipe`);
  variants: the ablations of TEAMS Tables 3 and 4 and Figure 5 and of COCO-LM Table 3
    (`_VARIANTS`), each a few model fields over its base experiment; variants not from a paper
    are registered by whoever studies them (`register_variant`; teams_lab's own). TEAMS
    Figure 4 (generator depth), Figure 5's K and COCO-LM Figure 4's crop fraction are one
    override each (`task.model.num_generator_layers`, `task.model.num_negatives`,
    `task.model.crop_fraction`); see docs/experiments.md.
Their default data is the embedded sample so that any experiment builds and starts anywhere;
point `task.train_data.input_path` (and `vocab_file` + `task.model.encoder.vocab_size`) at a real
corpus for a paper-scale run. Each registered factory's docstring is its one-line description
(`python -m teams_tf.train --list_experiments`).
"""

import dataclasses
import functools
import typing
from typing import Callable, Optional

from official.core import config_definitions as cfg
from official.nlp.configs import encoders as mg_encoders

from teams_tf.configs import encoders
from teams_tf.configs import models
from teams_tf.configs import optimization
from teams_tf.configs import trainer
from teams_tf.data import embedded
from teams_tf.data import pretrain_dataloader
from teams_tf.data import tokenization
from teams_tf.registry import catalog
from teams_tf.tasks import coco_lm_task
from teams_tf.tasks import mlm_task
from teams_tf.tasks import script_task
from teams_tf.tasks import taco_task
from teams_tf.tasks import teams_task

# ELECTRA Table 6 "Generator Size": multiplier of hidden size, FFN size and heads; the
# generator is as deep as the discriminator (ELECTRA §3.2). 'demo' (not from a paper) halves the
# tiny width, the narrowest that keeps whole attention heads.
# 'mini' takes 1/2, the wide end of ELECTRA's best range ("1/4-1/2 the size of the
# discriminator", §3.2); with its 2 heads a quarter-width generator would have half a head.
_ELECTRA_GENERATOR_WIDTH = {'small': 1 / 4, 'base': 1 / 3, 'large': 1 / 4, 'demo': 1 / 2,
                            'mini': 1 / 2}


def _electra_fields(size, encoder):
  """ELECTRA: RTD only (Eq. 1 + λ·Eq. 4), λ = 50, FFN head on layer L, embeddings-only tie."""
  return dict(num_generator_layers=encoder.num_layers,
              generator_width_fraction=_ELECTRA_GENERATOR_WIDTH[size], num_shared_layers=0,
              rtd_head_type='ffn', rtd_loss_weight=50.0, mws_loss_weight=0.0)


# COCO-LM §4: the auxiliary Transformer has the main one's width and 4 layers for a 12-layer main
# model (base; small has the same depth), 6 for 24 (large). 'demo' keeps the ~1/3 ratio.
_COCO_LM_AUXILIARY_LAYERS = {'small': 4, 'base': 4, 'large': 6, 'demo': 1, 'mini': 1}

# SCRIPT's α (§4.1: 50) at the low-budget sizes, chosen by measurement: on one shared encoder and
# head, 50 and 10 hold `script_mini` on the frequency plateau (held-out MLM accuracy 7.2% and 6.2%
# at step 500, under the context-free 14.2%) while 1 reads 20.7% with a better critic (disc AUC
# 0.597 against 0.579 at 50 and 0.548 at 10; benchmarks/learning_recipe.md). At α = 50
# `script_demo` ended its 1,400 steps at MLM accuracy 0.038 against the context-free 0.124.
_SCRIPT_LOW_BUDGET_ALPHA = 1.0

# Model fields of an objective or variant at a size, given its encoder config.
_Fields = Callable[[str, mg_encoders.BertEncoderConfig], dict]


@dataclasses.dataclass(frozen=True)
class _Objective:
  """A pretraining objective: its task and model configs and the fields it sets on the model.

  Fields `fields` does not return keep the paper defaults of the model dataclass.
  """
  task_config_cls: type
  model_config_cls: type
  description: str
  fields: Optional[_Fields] = None


_OBJECTIVES = {
    'teams': _Objective(
        teams_task.TeamsPretrainTaskConfig, models.TeamsConfig,
        'TEAMS: MLM + 5·RTD + 2·MWS, attention RTD head, half-depth tied generator'),
    'electra': _Objective(
        teams_task.TeamsPretrainTaskConfig, models.TeamsConfig,
        'ELECTRA: MLM + 50·RTD, FFN head, ELECTRA-width generator, tied embeddings',
        _electra_fields),
    'bert': _Objective(mlm_task.MlmPretrainTaskConfig, models.MlmConfig,
                       'BERT: MLM only, no next-sentence prediction'),
    'mws': _Objective(
        teams_task.TeamsPretrainTaskConfig, models.TeamsConfig,
        'Only MWS (Table 2): TEAMS without the RTD loss and head',
        lambda size, encoder: dict(rtd_loss_weight=0.0)),
    'script': _Objective(
        script_task.ScriptPretrainTaskConfig, models.ScriptConfig,
        'SCRIPT: MLM + α·self-critic loss (α 50, at demo and mini 1: measured), one encoder, '
        'Gumbel-softmax resampling',
        lambda size, encoder: (dict(discriminator_loss_weight=_SCRIPT_LOW_BUDGET_ALPHA)
                               if size in ('demo', 'mini') else {})),
    'taco': _Objective(
        taco_task.TacoPretrainTaskConfig, models.TacoConfig,
        'TACO: MLM + token-alignment contrast (W 5, K 50, τ 0.07), one encoder'),
    'coco_lm': _Objective(
        coco_lm_task.CocoLmPretrainTaskConfig, models.CocoLmConfig,
        'COCO-LM: auxiliary MLM + CLM (50·copy + LM) + SCL, full-width shallow auxiliary, T5 '
        'relative positions',
        lambda size, encoder: dict(num_generator_layers=_COCO_LM_AUXILIARY_LAYERS[size])),
}

@dataclasses.dataclass(frozen=True)
class Variant:
  """An ablation or baseline: a few model fields over `objective`'s experiment.

  The papers' ablations are registered here; a research variant is registered by whoever
  studies it (`register_variant`; teams_tf's own are in `teams_lab/research_variants.py`).

  Attributes:
    objective: the objective it modifies.
    description: what it is, citing the paper's table.
    fields: the model fields it sets, over the objective's.
    sizes: the sizes it is registered at (`pretraining_experiment` builds any size).
    paper: the paper whose settings (architecture, optimisation, sequence length) it runs at;
      None: its objective's.
  """
  objective: str
  description: str
  fields: _Fields
  sizes: tuple[str, ...]
  paper: Optional[str] = None


# Table 4 reports small and base, COCO-LM Table 3 base, TACO §5.2 base; mini for the learning
# benchmark.
_ABLATION_SIZES = ('small', 'base', 'mini')
_VARIANTS = {
    'teams_reimpl': Variant(
        'electra', "the TEAMS paper's ELECTRA reimplementation (half-depth, full-width "
        'generator, §4.1); Table 2 "Only RTD"',
        lambda size, encoder: dict(num_generator_layers=None, generator_width_fraction=1.0),
        ('small', 'base', 'large', 'mini')),
    'ffn_heads': Variant(
        'teams', 'Table 3 "Use FFN task heads" (per-token FFN RTD head on layer L)',
        lambda size, encoder: dict(rtd_head_type='ffn'), ('small', 'mini')),
    # This and the next keep a stack that is not the discriminator, which a relative position
    # bias rules out (`teams_pretrainer.resolve_layout`): no mini.
    'top_task_layers': Variant(
        'teams', 'Table 3 "Add task head on 12th layer" (two task layers on layer L; kept '
        'encoder has L + 1 layers)',
        lambda size, encoder: dict(rtd_head_input_layer=encoder.num_layers, mws_task_layer=True),
        ('small',)),
    'rtd_outputs': Variant(
        'teams', 'Table 3 "Use RTD task head outputs" (kept encoder: layers 1..L-1 + RTD task '
        'layer)', lambda size, encoder: dict(exported_representation='rtd_task_layer'),
        ('small',)),
    'full_tie': Variant(
        'teams', 'Table 4 "Full Tie" (every generator layer is a discriminator layer)',
        lambda size, encoder: dict(num_shared_layers=max(1, encoder.num_layers // 2)),
        _ABLATION_SIZES),
    'no_tie': Variant(
        'teams', 'Table 4 "No Tie" (generator and discriminator share only embeddings)',
        lambda size, encoder: dict(num_shared_layers=0), _ABLATION_SIZES),
    'hardest': Variant(
        'teams', 'Figure 5 "Hardest" (the K most likely non-original tokens as negatives)',
        lambda size, encoder: dict(candidate_sampling='hardest'), ('small', 'mini')),
    # COCO-LM Table 3, each one component eliminated (w/o.), kept (Only) or switched (w.).
    'rtd_only': Variant(
        'coco_lm', 'COCO-LM Table 3 "RTD Only" (the copy/RTD loss alone: no LM, no SCL)',
        lambda size, encoder: dict(lm_loss_weight=0.0, scl_loss_weight=0.0), _ABLATION_SIZES),
    'clm_only': Variant(
        'coco_lm', 'COCO-LM Table 3 "CLM Only" (no SCL)',
        lambda size, encoder: dict(scl_loss_weight=0.0), _ABLATION_SIZES),
    'scl_rtd': Variant(
        'coco_lm', 'COCO-LM Table 3 "SCL + RTD" (no language-model part of CLM)',
        lambda size, encoder: dict(lm_loss_weight=0.0), _ABLATION_SIZES),
    'no_rel_pos': Variant(
        'coco_lm', 'COCO-LM Table 3 "w/o. Rel-Pos" (absolute positions only; kept encoder is a '
        'BertEncoderV2)', lambda size, encoder: dict(relative_position_bias=False),
        _ABLATION_SIZES),
    'electra_aux': Variant(
        'coco_lm', "COCO-LM Table 3 \"w. ELECTRA's Auxiliary\" (as deep as the main model, "
        "ELECTRA's width)",
        lambda size, encoder: dict(num_generator_layers=encoder.num_layers,
                                   generator_width_fraction=_ELECTRA_GENERATOR_WIDTH[size]),
        _ABLATION_SIZES),
    'random_replace': Variant(
        'coco_lm', 'COCO-LM Table 3 "w. Random Replacements" (no auxiliary model)',
        lambda size, encoder: dict(replacement='random'), _ABLATION_SIZES),
    'all_token_lm': Variant(
        'coco_lm', 'COCO-LM Table 3 "All-Token LM Only" (ELECTRA\'s All-Token MLM: LM with '
        'copy on every token, no copy loss, no stop-gradient)',
        lambda size, encoder: dict(lm_positions='all', copy_loss_weight=0.0,
                                   clm_stop_gradient=False), _ABLATION_SIZES),
    'no_copy': Variant(
        'coco_lm', 'COCO-LM Table 3 "CLM w/o. Copy" (p_LM is the plain softmax)',
        lambda size, encoder: dict(copy_mechanism=False), _ABLATION_SIZES),
    'no_stop_grad': Variant(
        'coco_lm', 'COCO-LM Table 3 "CLM w/o. Stop-grad" (L_LM also trains p_copy)',
        lambda size, encoder: dict(clm_stop_gradient=False), _ABLATION_SIZES),
    # TACO §5.2 ablations and its MLM baseline.
    'concentrated': Variant(
        'taco', 'TACO §5.2 "concentrated TACO" (TC on the masked positions only)',
        lambda size, encoder: dict(tc_positions='masked'), _ABLATION_SIZES),
    'mlm_tp': Variant(
        'taco', 'TACO §5.2 "MLM+TP" (token prediction on every position)',
        lambda size, encoder: dict(mlm_positions='all'), _ABLATION_SIZES),
    # mini is one recipe for every objective: TACO's settings make no mini of their own.
    'taco_settings': Variant(
        'bert', "TACO's Table 5 architecture and optimisation (its MLM baseline)",
        lambda size, encoder: {}, ('small', 'base'), paper='taco'),
}
# COCO-LM's Table 3 ablations.
COCO_LM_ABLATIONS = tuple(name for name, variant in _VARIANTS.items()
                          if variant.objective == 'coco_lm')

# Table 5 optimisation values per size: (learning rate, batch size, train steps).
_TABLE5_OPTIMIZATION = {
    'small': (5e-4, 256, 500_000),
    'base': (2e-4, 256, 1_000_000),
    'large': (2e-4, 2048, 1_760_000),
}
_TABLE5_WARMUP_STEPS = 10_000


class _Settings(typing.NamedTuple):
  """A paper's own pretraining settings at one size."""
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
    'script': {'small': _Settings('small', 5e-4, 128, 1_000_000, 128),
               'base': _Settings('base', 2e-4, 256, 766_000, 512)},
    'taco': {'small': _Settings('taco_small', 1e-4, 1280, 250_000, 256, 2_500, 1e-8),
             'base': _Settings('base', 1e-4, 1280, 500_000, 256, 10_000, 1e-8)},
}


def _data(input_path, is_training, seq_length, batch_size):
  """Raw-text data config, 15% masking with BERT's 80/10/10 replacement (Appendix B)."""
  return pretrain_dataloader.PretrainDataConfig(
      input_path=input_path,
      is_training=is_training,
      seq_length=seq_length,
      max_predictions_per_seq=round(0.15 * seq_length),
      global_batch_size=batch_size,
      seed=1 if not is_training else None)


def _model(objective, size, variant, encoder):
  """The model config of an objective, size and optional variant."""
  spec = _OBJECTIVES[objective]
  fields = spec.fields(size, encoder) if spec.fields else {}
  if variant is not None:
    fields.update(_VARIANTS[variant].fields(size, encoder))
  return spec.task_config_cls, spec.model_config_cls(encoder=encoder, **fields)


def _experiment(model, task_config_cls, settings, trainer_overrides, runtime=None):
  """Pretraining experiment of a model config over the embedded sample data.

  Args:
    model: the objective's model config.
    task_config_cls: its task's config class.
    settings: a `_Settings` or `_LowBudgetRecipe`: optimisation, batch and sequence length
      (evaluation batches are as large as training ones).
    trainer_overrides: further `PretrainTrainerConfig` fields.
    runtime: a RuntimeConfig; the default one when None.
  """
  return cfg.ExperimentConfig(
      runtime=runtime or cfg.RuntimeConfig(),
      task=task_config_cls(
          model=model,
          train_data=_data('sample:train', True, settings.seq_length, settings.batch_size),
          validation_data=_data('sample:valid', False, settings.seq_length,
                                settings.batch_size)),
      trainer=trainer.PretrainTrainerConfig(
          train_steps=settings.train_steps,
          optimizer_config=optimization.adamw_linear_decay(
              settings.learning_rate, settings.train_steps, settings.warmup_steps,
              settings.adam_epsilon),
          **trainer_overrides),
      restrictions=[
          'task.train_data.is_training != None',
          'task.validation_data.is_training != None',
      ])


@functools.cache  # The embedded vocabulary is read once, not once per experiment built.
def _sample_vocab_size():
  return tokenization.load_vocabulary(embedded.resolve_path('sample:vocab')).size


def _paper(objective, variant):
  """The paper whose settings an objective, or its variant, runs at."""
  return (variant and _VARIANTS[variant].paper) or objective


def _settings(objective, size, variant):
  """The paper settings of an experiment: its objective's (or its variant's) own, or Table 5."""
  paper = _paper(objective, variant)
  if paper in _OWN_SETTINGS:
    return _OWN_SETTINGS[paper][size]
  return _Settings(size, *_TABLE5_OPTIMIZATION[size], seq_length=512)


def _paper_size(objective, size, variant):
  """TEAMS Table 5 / §4.1 settings (sequence length 512), or the paper's own."""
  settings = _settings(objective, size, variant)
  task_config_cls, model = _model(objective, size, variant, encoders.encoder_config(
      settings.encoder_size, vocab_size=_sample_vocab_size()))
  return _experiment(
      model, task_config_cls, settings,
      trainer_overrides=dict(
          steps_per_loop=1000, summary_interval=1000, checkpoint_interval=10_000,
          validation_interval=10_000, validation_steps=100),
      # The papers pretrain on TPUs; bfloat16 activations with float32 variables and losses.
      # On GPUs or CPUs: --params_override=runtime.distribution_strategy=mirrored.
      runtime=cfg.RuntimeConfig(distribution_strategy='tpu', mixed_precision_dtype='bfloat16'))


class _LowBudgetRecipe(typing.NamedTuple):
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
# accuracy at step 800 against 18.0% (benchmarks/learning_recipe.md).
_MINI = _LowBudgetRecipe(
    encoder_size='mini', mask_rate=0.4, eval_mask_rate=0.15, seq_length=64, batch_size=64,
    learning_rate=2e-3, warmup_steps=300, train_steps=10_000, relative_position_bias_scale=10.0,
    trainer_overrides=dict(steps_per_loop=100, summary_interval=100, checkpoint_interval=500,
                           validation_interval=500, validation_steps=50, max_to_keep=2))
# `*_demo`, the README's first command: 4 layers, H 64, under 3 minutes of training on 2 cores.
# The bias scale of 10 halved the steps a demo-size encoder needs to leave the plateau; 5e-3 and
# 1e-3 peak learning rates were slower than 3e-3. At 800 steps the TEAMS discriminator ended at
# what token identity gives and one run of two left the generator on the plateau; at 1,400 every
# run passed all three context-free baselines (benchmarks/learning_recipe.md).
_DEMO = _LowBudgetRecipe(
    encoder_size='tiny', mask_rate=0.4, eval_mask_rate=0.15, seq_length=64, batch_size=32,
    learning_rate=3e-3, warmup_steps=175, train_steps=1400, relative_position_bias_scale=10.0,
    trainer_overrides=dict(steps_per_loop=50, summary_interval=50, checkpoint_interval=200,
                           validation_interval=400, validation_steps=-1, max_to_keep=3))
_LOW_BUDGET_RECIPES = {'demo': _DEMO, 'mini': _MINI}
# The sizes of `_LOW_BUDGET_RECIPES`, registered for every objective; their fine-tuning builds
# the runs' own encoder.
LOW_BUDGET_SIZES = tuple(_LOW_BUDGET_RECIPES)


def _predictions(mask_rate, seq_length):
  """P for a mask rate: every masked token of a full sequence ([CLS] and [SEP] excluded)."""
  return round(mask_rate * (seq_length - 2))


def low_budget_encoder_config(size):
  """The `*_demo` or `*_mini` runs' encoder: pre-LN, no dropout, the sample vocabulary.

  Its width is also its embedding width (no factorised embedding) and it has as many positions
  as the recipe's sequences. Every objective at these sizes also adds a relative position bias
  (`relative_position_bias`, a model field) but for COCO-LM's "w/o. Rel-Pos" ablation.

  Args:
    size: 'demo' or 'mini'.
  """
  recipe = _LOW_BUDGET_RECIPES[size]
  encoder = encoders.encoder_config(recipe.encoder_size, vocab_size=_sample_vocab_size(),
                                    max_position_embeddings=recipe.seq_length)
  encoder.embedding_size = encoder.hidden_size
  encoder.norm_first = True
  encoder.dropout_rate = encoder.attention_dropout_rate = 0.0
  return encoder


def low_budget_mask_rate(size):
  """The training mask rate of the `*_demo` or `*_mini` runs."""
  return _LOW_BUDGET_RECIPES[size].mask_rate


def relative_position_bias_scale(size):
  """The relative position bias scale of the `*_demo` or `*_mini` runs (fine-tuning keeps it)."""
  return _LOW_BUDGET_RECIPES[size].relative_position_bias_scale


def _low_budget(objective, size, variant):
  """An objective at a low-budget recipe (`_DEMO`, `_MINI`), on the embedded sample."""
  recipe = _LOW_BUDGET_RECIPES[size]
  task_config_cls, model = _model(objective, size, variant, low_budget_encoder_config(size))
  # COCO-LM's Table 3 "w/o. Rel-Pos" is the one variant that turns it off.
  model.relative_position_bias = variant != 'no_rel_pos'
  model.relative_position_bias_scale = recipe.relative_position_bias_scale
  config = _experiment(model, task_config_cls, recipe, dict(recipe.trainer_overrides))
  train_data, validation_data = config.task.train_data, config.task.validation_data
  train_data.mask_rate = recipe.mask_rate
  train_data.max_predictions_per_seq = _predictions(recipe.mask_rate, recipe.seq_length)
  validation_data.mask_rate = recipe.eval_mask_rate
  validation_data.max_predictions_per_seq = _predictions(recipe.eval_mask_rate,
                                                         recipe.seq_length)
  return config


_SIZE_DESCRIPTIONS = {
    'small': 'small, Table 5 (12 layers, H 256, E 128; lr 5e-4, batch 256, 500k steps)',
    'base': 'base, Table 5 (12 layers, H 768; lr 2e-4, batch 256, 1M steps)',
    'large': 'large, Table 5 (24 layers, H 1024; lr 2e-4, batch 2048, 1.76M steps)',
    'demo': ('demo, the README\'s first run (4 layers, H 64, pre-LN, no dropout, relative '
             'positions at 10x; 40% masking, T 64, batch 32, lr 3e-3, 1,400 steps: 3 minutes)'),
    'mini': ('mini, the learning benchmark (4 layers, H 128, pre-LN, no dropout, relative '
             'positions at 10x; 40% masking, T 64, batch 64, lr 2e-3, 10k steps)'),
}


def sizes(objective):
  """The sizes an objective is registered at: its paper's, or every Table 5 size; demo, mini."""
  paper_sizes = _OWN_SETTINGS.get(objective, _TABLE5_OPTIMIZATION)
  return [size for size in _SIZE_DESCRIPTIONS
          if size in paper_sizes or size in LOW_BUDGET_SIZES]


def _size_description(objective, size, variant=None):
  paper = _paper(objective, variant)
  if paper not in _OWN_SETTINGS or size in LOW_BUDGET_SIZES:
    return _SIZE_DESCRIPTIONS[size]
  settings = _OWN_SETTINGS[paper][size]
  layers, hidden = encoders.encoder_config(settings.encoder_size).num_layers, (
      encoders.encoder_config(settings.encoder_size).hidden_size)
  return (f'{size} of its paper ({layers} layers, H {hidden}; lr {settings.learning_rate:g}, '
          f'batch {settings.batch_size}, {settings.train_steps:,} steps, T={settings.seq_length})')


def pretraining_experiment(objective, size, variant=None):
  """The experiment `<objective>_<size>[_<variant>]`, registered or not.

  Args:
    objective: a key of `_OBJECTIVES` ('teams', 'electra', 'bert', 'mws', 'coco_lm', 'script').
    size: one of `sizes(objective)`: 'small', 'base', 'large' (Table 5), 'demo' or 'mini'.
    variant: None or a key of `_VARIANTS` that applies to the objective.

  Returns:
    An ExperimentConfig.

  Raises:
    ValueError: an unknown objective, size or variant, or a variant of another objective.
  """
  for kind, value, known in (('objective', objective, _OBJECTIVES),
                             ('size', size, _SIZE_DESCRIPTIONS),
                             ('variant', variant, _VARIANTS)):
    if value not in known and (kind != 'variant' or value is not None):
      raise ValueError(f'Unknown {kind} {value!r}; use one of {sorted(known)}.')
  if variant and _VARIANTS[variant].objective != objective:
    raise ValueError(f'Variant {variant!r} applies to {_VARIANTS[variant].objective!r}, not '
                     f'{objective!r}.')
  paper = _paper(objective, variant)
  if size not in sizes(paper):
    raise ValueError(f'{paper} has no size {size!r}; use one of {sizes(paper)}.')
  if size in LOW_BUDGET_SIZES:
    return _low_budget(objective, size, variant)
  return _paper_size(objective, size, variant)


def experiment_name(objective, size, variant=None):
  """The registered name `<objective>_<size>[_<variant>]` (the inverse of `split_name`)."""
  return '_'.join([objective, size] + ([variant] if variant else []))


def _register(objective, size, variant=None, research=False):
  description = f'{_OBJECTIVES[objective].description}; {_size_description(objective, size)}'
  if variant:
    description = (f'{objective}_{size} with {_VARIANTS[variant].description}; '
                   f'{_size_description(objective, size, variant)}')
  catalog.register(experiment_name(objective, size, variant), description,
                   lambda: pretraining_experiment(objective, size, variant), research)


def register_variant(name: str, variant: Variant) -> None:
  """Registers `<objective>_<size>_<name>` at each of `variant.sizes`.

  Raises:
    ValueError: a variant of that name already registered, or an unknown objective.
  """
  if name in _VARIANTS:
    raise ValueError(f'Variant {name!r} is already registered ({_VARIANTS[name].description}).')
  if variant.objective not in _OBJECTIVES:
    raise ValueError(f'Variant {name!r}: unknown objective {variant.objective!r}; use one of '
                     f'{sorted(_OBJECTIVES)}.')
  _VARIANTS[name] = variant
  for size in variant.sizes:
    _register(variant.objective, size, name, research=True)


for _objective in _OBJECTIVES:
  for _size in sizes(_objective):
    _register(_objective, _size)
for _name, _spec in _VARIANTS.items():
  for _size in _spec.sizes:
    _register(_spec.objective, _size, _name)


def split_name(name):
  """(objective, size, variant or None) of a pretraining experiment name.

  Raises:
    ValueError: `name` is not `<objective>_<size>[_<variant>]` of known parts.
  """
  for objective in sorted(_OBJECTIVES, key=len, reverse=True):
    if name.startswith(objective + '_'):
      size, _, variant = name[len(objective) + 1:].partition('_')
      if size in _SIZE_DESCRIPTIONS and (not variant or variant in _VARIANTS):
        return objective, size, variant or None
  raise ValueError(f'{name!r} is not <objective>_<size>[_<variant>] with objective in '
                   f'{sorted(_OBJECTIVES)}, size in {sorted(_SIZE_DESCRIPTIONS)}.')


experiment_names = catalog.experiment_names
describe = catalog.describe
is_pretraining = catalog.is_pretraining
