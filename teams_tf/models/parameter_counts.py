"""Parameter counts of a pretrainer: the kept encoder, the generator, everything trained.

TEAMS Table 1 compares methods by the size of the encoder that is kept for fine-tuning (14M
small, 110M base, 335M large); the generator and the task heads are thrown away but cost
compute during pretraining. Counting from the built model (not from formulas) makes the
comparison hold for every configuration, shared layers counted once.
"""

import numpy as np


def _size(variables):
  """Number of scalars in the distinct variables (a shared variable counts once)."""
  unique = {id(v): v for v in variables}
  return int(sum(np.prod(v.shape.as_list()) for v in unique.values()))


def parameter_counts(model):
  """Counts the parameters of a built pretrainer (its variables must exist: call it once).

  Args:
    model: a `TeamsPretrainer` or Model Garden `BertPretrainerV2`; anything with
      `checkpoint_items['encoder']` (the kept encoder) and optionally `generator_network` and
      `masked_lm` (the generator's MLM head).

  Returns:
    Dict of ints: `kept_encoder` (every variable restored into the fine-tuning encoder,
    including the untrained pooler, as Model Garden's BertEncoderV2 counts it), `generator`
    (variables only the generator and its MLM head use: 0 without a generator) and
    `total_trained` (distinct trainable variables of the whole pretrainer).
  """
  kept = model.checkpoint_items['encoder'].variables
  generator = 0
  if getattr(model, 'generator_network', None) is not None:
    discriminator_ids = {id(v) for v in model.discriminator_network.variables}
    generator = _size([v for v in model.generator_network.trainable_variables +
                       model.masked_lm.trainable_variables
                       if id(v) not in discriminator_ids])
  return dict(kept_encoder=_size(kept), generator=generator,
              total_trained=_size(model.trainable_variables))
