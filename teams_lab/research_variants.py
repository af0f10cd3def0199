"""Research variants of the mini recipe, not from a paper, registered beside the papers' own.

Each is a few model fields over its objective's `*_mini` experiment, a question the learning
benchmark and the replication asked of the recipe (which setting keeps TEAMS' features where
ELECTRA's lose them, what the 40% masking does to RTD; findings in benchmarks/FINDINGS.md).
Importing this module registers them (`experiments.register_variant`); `python -m
teams_lab.train` is `teams_tf.train` with them registered.
"""

from teams_tf.registry import experiments
from teams_tf.registry import recipes


def _without_mws(encoder, **fields) -> dict:
  """TEAMS' model fields without the MWS loss and head, plus `fields`.

  The attention RTD head moves from layer L - 1 to L, which MWS's head would otherwise read:
  left on L - 1, layer L would get no gradient and be kept untrained.
  """
  return dict(mws_loss_weight=0.0, rtd_head_input_layer=encoder.num_layers, **fields)


VARIANTS = {
    # Not from a paper: with the mini recipe's 40% masking more than a quarter of every
    # discriminator input is fake (teams_lab/RECIPE_NOTES.md, "Encoders that fine-tune worse
    # than random init"); this corrupts as many tokens as ELECTRA's 15% masking does.
    'corrupt15': experiments.Variant(
        'electra', 'the discriminator input corrupted at 15% of the tokens, a random subset of '
        'the masked positions (`corruption_fraction` 0.15 / mask rate)',
        lambda size, encoder: dict(
            corruption_fraction=round(0.15 / recipes.low_budget_mask_rate(size), 6)),
        ('mini',)),
    # Not from a paper: [CLS] and [SEP] are never replaced, so RTD over every token teaches them
    # only "original", and [CLS] is what sentence classifiers read (teams_lab/RECIPE_NOTES.md,
    # "Fewer fake tokens do not help").
    'text_rtd': experiments.Variant(
        'electra', 'the RTD loss over the text tokens only, [CLS] and [SEP] left out '
        "(`rtd_loss_positions='text'`; not from a paper)",
        lambda size, encoder: dict(rtd_loss_positions='text'), ('mini',)),
    # Not from a paper's setting but from ELECTRA's own search grid for λ (1, 10, 20, 50, 100;
    # Clark et al. 2020, Appendix A): at the mini budget's end λ=50 weights RTD's loss at about
    # 5 times the generator's MLM loss, through the embeddings the two share
    # (teams_lab/RECIPE_NOTES.md, "The ELECTRA variants and MWS-only on the wider grid").
    'rtd10': experiments.Variant(
        'electra', 'the RTD loss weighted λ=10 instead of ELECTRA\'s 50 (a value of ELECTRA\'s '
        'own search grid; not its chosen setting)',
        lambda size, encoder: dict(rtd_loss_weight=10.0), ('mini',)),
    # Not from a paper: ELECTRA at TEAMS' RTD weight, the converse of `no_mws_rtd50`, which lost
    # TEAMS' features to ELECTRA's level at weight 50 (teams_lab/RECIPE_NOTES.md, "TEAMS
    # without MWS at ELECTRA's RTD weight").
    'rtd5': experiments.Variant(
        'electra', 'the RTD loss weighted λ=5, TEAMS\' λ1, instead of ELECTRA\'s 50 (not from '
        'a paper)',
        lambda size, encoder: dict(rtd_loss_weight=5.0), ('mini',)),
    # Not from a paper: `rtd5` with one of the two settings that still separate it from
    # `teams_mini_no_mws`, whose layers keep STS-B's token similarity where `rtd5`'s lose it
    # (teams_lab/RECIPE_NOTES.md, "ELECTRA at TEAMS' RTD weight").
    'rtd5_attention_head': experiments.Variant(
        'electra', 'the RTD loss weighted λ=5 and read by TEAMS\' attention head on layer L '
        'instead of the per-token dense head (not from a paper)',
        lambda size, encoder: dict(rtd_loss_weight=5.0, rtd_head_type='attention',
                                   rtd_head_input_layer=encoder.num_layers), ('mini',)),
    # Not from a paper: the other setting, TEAMS' generator shape without its shared layer (No
    # Tie, which has none, keeps the similarity).
    'rtd5_teams_generator': experiments.Variant(
        'electra', 'the RTD loss weighted λ=5 with TEAMS\' generator: half depth at full width, '
        'sharing only the embeddings (not from a paper)',
        lambda size, encoder: dict(rtd_loss_weight=5.0, num_generator_layers=None,
                                   generator_width_fraction=1.0), ('mini',)),
    # Not from a paper (Table 2's "Only RTD" is ELECTRA's layout, `teams_reimpl`): TEAMS' RTD
    # alone at TEAMS' own layout, to tell what keeps TEAMS' features where ELECTRA's lose them
    # (teams_lab/RECIPE_NOTES.md, "TEAMS without its shared layer").
    'no_mws': experiments.Variant(
        'teams', 'TEAMS without the MWS loss and head (RTD at weight 5, attention head on layer L, '
        'shared layer; not from a paper)',
        lambda size, encoder: _without_mws(encoder), ('mini',)),
    # Not from a paper: `no_mws` at ELECTRA's RTD weight. Of the settings that still separate it
    # from ELECTRA (RTD weight, head, generator), the one an earlier run (`rtd10`) tied to
    # ELECTRA's lost features.
    'no_mws_rtd50': experiments.Variant(
        'teams', 'TEAMS without the MWS loss and head, RTD at ELECTRA\'s weight 50 instead of '
        'TEAMS\' 5 (attention head on layer L, shared layer; not from a paper)',
        lambda size, encoder: _without_mws(encoder, rtd_loss_weight=50.0), ('mini',)),
    # Not from a paper: `no_mws` without its shared layer, which is `rtd5` with both of TEAMS'
    # settings that neither `rtd5_attention_head` nor `rtd5_teams_generator` alone made keep the
    # STS-B similarity (teams_lab/RECIPE_NOTES.md, "ELECTRA at weight 5 with TEAMS' head, or
    # with TEAMS' generator").
    'no_mws_no_tie': experiments.Variant(
        'teams', 'TEAMS without the MWS loss and head and without the shared layer (RTD at '
        'weight 5, attention head on layer L, generator and discriminator share only '
        'embeddings; not from a paper)',
        lambda size, encoder: _without_mws(encoder, num_shared_layers=0), ('mini',)),
}

for _name, _variant in VARIANTS.items():
  experiments.register_variant(_name, _variant)
