"""The optimiser every TEAMS-paper run uses (Table 5 pretraining, Table 6 fine-tuning)."""

from official.modeling import optimization


def adamw_linear_decay(learning_rate, train_steps, warmup_steps, epsilon=1e-6):
  """AdamW (β 0.9/0.999, ε 1e-6, weight decay 0.01), linear warmup then linear decay to 0.

  Tables 5 and 6 values. Gradients are clipped to global norm 1.0, as in BERT and ELECTRA (Model
  Garden's AdamW default); the TEAMS paper does not mention clipping.

  Args:
    learning_rate: peak learning rate.
    train_steps: steps until the rate reaches 0.
    warmup_steps: steps of linear warmup from 0.
    epsilon: Adam's ε (TEAMS: 1e-6; TACO Table 5: 1e-8).

  Returns:
    A Model Garden `OptimizationConfig`.
  """
  return optimization.OptimizationConfig({
      'optimizer': {
          'type': 'adamw',
          'adamw': {
              'weight_decay_rate': 0.01,
              'exclude_from_weight_decay': ['LayerNorm', 'layer_norm', 'bias'],
              'beta_1': 0.9,
              'beta_2': 0.999,
              'epsilon': epsilon,
          },
      },
      'learning_rate': {
          'type': 'polynomial',
          'polynomial': {
              'initial_learning_rate': learning_rate,
              'decay_steps': train_steps,
              'end_learning_rate': 0.0,
              'power': 1.0,
          },
      },
      'warmup': {
          'type': 'linear',
          'linear': {'warmup_steps': warmup_steps},
      },
  })
