"""Registered pretraining experiments (`exp_factory` names) with the TEAMS paper's settings.

Every experiment is `<objective>_<size>[_<variant>]`, built by `pretraining_experiment`:
  objectives: `teams` (Eq. 9), `electra` (RTD only, ELECTRA's λ = 50 and generator width),
    `bert` (MLM only) and `mws` (TEAMS without RTD) — the baselines of TEAMS Tables 1 and 2 —,
    `coco_lm` (COCO-LM Eq. 4) and `script` (SCRIPT §2, at the sizes and settings of its
    Table 4);
  sizes: `small`, `base`, `large` follow Table 5 (architecture, optimiser, batch size, steps;
    sequence length 512, §4.1) for every objective, so runs of one size are compute-matched;
    `demo` (3 minutes on a laptop CPU) and `mini` (the learning benchmark) are small encoders
    on the embedded sample with one low-budget recipe for every objective (`recipes.py`);
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
from typing import Callable, Optional

from official.core import config_definitions as cfg
from official.nlp.configs import encoders as mg_encoders

from teams_tf.configs import encoders
from teams_tf.configs import models
from teams_tf.configs import optimization
from teams_tf.configs import trainer
from teams_tf.data import pretrain_dataloader
from teams_tf.registry import catalog
from teams_tf.registry import recipes
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
# head, 50 and 10 hold `script_mini` on the frequency plateau (held-out MLM accuracy 7.5% at the
# 3,000-step budget at 50, 6.2% at step 500 at 10, under the context-free 14.2%) while 1 reads
# 26.8% with a better critic (AUC 0.631 against 0.602 at 50; teams_lab/RECIPE_NOTES.md, "The mini
# benchmark re-run"). At α = 50 `script_demo` ended its 1,400 steps at MLM accuracy 0.038 against
# the context-free 0.124.
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
                               if size in recipes.LOW_BUDGET_SIZES else {})),
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

def _data(input_path, is_training, seq_length, batch_size, mask_rate, max_predictions):
  """Raw-text data config: `mask_rate` of the tokens masked, BERT's 80/10/10 replacement."""
  return pretrain_dataloader.PretrainDataConfig(
      input_path=input_path,
      is_training=is_training,
      seq_length=seq_length,
      mask_rate=mask_rate,
      max_predictions_per_seq=max_predictions,
      global_batch_size=batch_size,
      seed=1 if not is_training else None)


def _model(objective, size, variant, encoder):
  """The model config of an objective, size and optional variant."""
  spec = _OBJECTIVES[objective]
  fields = spec.fields(size, encoder) if spec.fields else {}
  if variant is not None:
    fields.update(_VARIANTS[variant].fields(size, encoder))
  return spec.task_config_cls, spec.model_config_cls(encoder=encoder, **fields)


def _experiment(model, task_config_cls, settings, trainer_overrides, masking, runtime=None):
  """Pretraining experiment of a model config over the embedded sample data.

  Args:
    model: the objective's model config.
    task_config_cls: its task's config class.
    settings: a `recipes.PaperSettings` or `recipes.LowBudgetRecipe`: optimisation, batch and
      sequence length (evaluation batches are as large as training ones).
    trainer_overrides: further `PretrainTrainerConfig` fields.
    masking: ((mask rate, max_predictions_per_seq) of training, the same of evaluation).
    runtime: a RuntimeConfig; the default one when None.
  """
  (train_rate, train_predictions), (eval_rate, eval_predictions) = masking
  return cfg.ExperimentConfig(
      runtime=runtime or cfg.RuntimeConfig(),
      task=task_config_cls(
          model=model,
          train_data=_data('sample:train', True, settings.seq_length, settings.batch_size,
                           train_rate, train_predictions),
          validation_data=_data('sample:valid', False, settings.seq_length,
                                settings.batch_size, eval_rate, eval_predictions)),
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


def _paper(objective, variant):
  """The paper whose settings an objective, or its variant, runs at."""
  return (variant and _VARIANTS[variant].paper) or objective


def _paper_size(objective, size, variant):
  """TEAMS Table 5 / §4.1 settings (sequence length 512), or the paper's own."""
  settings = recipes.paper_settings(_paper(objective, variant), size)
  task_config_cls, model = _model(objective, size, variant, encoders.encoder_config(
      settings.encoder_size, vocab_size=recipes.sample_vocab_size()))
  # P = 15% of T, rounded: 77 at T = 512.
  masking = (recipes.PAPER_MASK_RATE, round(recipes.PAPER_MASK_RATE * settings.seq_length))
  return _experiment(
      model, task_config_cls, settings,
      trainer_overrides=dict(
          steps_per_loop=1000, summary_interval=1000, checkpoint_interval=10_000,
          validation_interval=10_000, validation_steps=100),
      masking=(masking, masking),
      # The papers pretrain on TPUs; bfloat16 activations with float32 variables and losses.
      # On GPUs or CPUs: --params_override=runtime.distribution_strategy=mirrored.
      runtime=cfg.RuntimeConfig(distribution_strategy='tpu', mixed_precision_dtype='bfloat16'))


def _low_budget(objective, size, variant):
  """An objective at a low-budget recipe (`recipes.LOW_BUDGET_RECIPES`), on the embedded sample."""
  recipe = recipes.LOW_BUDGET_RECIPES[size]
  task_config_cls, model = _model(objective, size, variant,
                                  recipes.low_budget_encoder_config(size))
  # COCO-LM's Table 3 "w/o. Rel-Pos" is the one variant that turns it off.
  model.relative_position_bias = variant != 'no_rel_pos'
  model.relative_position_bias_scale = recipe.relative_position_bias_scale
  masking = tuple((rate, recipes.max_predictions(rate, recipe.seq_length))
                  for rate in (recipe.mask_rate, recipe.eval_mask_rate))
  return _experiment(model, task_config_cls, recipe, dict(recipe.trainer_overrides), masking)


def sizes(objective):
  """The sizes an objective is registered at: its paper's, or every Table 5 size; demo, mini."""
  return [size for size in recipes.SIZES
          if size in recipes.paper_sizes(objective) or size in recipes.LOW_BUDGET_SIZES]


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
                             ('size', size, recipes.SIZES),
                             ('variant', variant, _VARIANTS)):
    if value not in known and (kind != 'variant' or value is not None):
      raise ValueError(f'Unknown {kind} {value!r}; use one of {sorted(known)}.')
  if variant and _VARIANTS[variant].objective != objective:
    raise ValueError(f'Variant {variant!r} applies to {_VARIANTS[variant].objective!r}, not '
                     f'{objective!r}.')
  paper = _paper(objective, variant)
  if size not in sizes(paper):
    raise ValueError(f'{paper} has no size {size!r}; use one of {sizes(paper)}.')
  if size in recipes.LOW_BUDGET_SIZES:
    return _low_budget(objective, size, variant)
  return _paper_size(objective, size, variant)


def experiment_name(objective, size, variant=None):
  """The registered name `<objective>_<size>[_<variant>]` (the inverse of `split_name`)."""
  return '_'.join([objective, size] + ([variant] if variant else []))


def _register(objective, size, variant=None, research=False):
  size_line = recipes.size_description(_paper(objective, variant), size)
  description = f'{_OBJECTIVES[objective].description}; {size_line}'
  if variant:
    description = f'{objective}_{size} with {_VARIANTS[variant].description}; {size_line}'

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
      if size in recipes.SIZES and (not variant or variant in _VARIANTS):
        return objective, size, variant or None
  raise ValueError(f'{name!r} is not <objective>_<size>[_<variant>] with objective in '
                   f'{sorted(_OBJECTIVES)}, size in {sorted(recipes.SIZES)}.')


experiment_names = catalog.experiment_names
describe = catalog.describe
is_pretraining = catalog.is_pretraining
