"""How the replication fine-tunes every encoder: its GLUE tasks and fine-tuning protocols.

A `FineTuneProtocol` is the same for every encoder, pretrained or not: tasks, seeds, epochs,
the learning-rate grid, T, train subsets, the head's pooling and the held-out slice. `PROTOCOLS`
names the two the replication runs: the papers' [CLS] head ('cls_head') and its token-pooling
ablation ('pooled').
"""

import dataclasses
from typing import Optional

# Task -> (folder of the GLUE download, the headline metric that `sweep` reports first).
GLUE_TASKS = {'sst2': ('SST-2', 'accuracy'), 'cola': ('CoLA', 'Matthews corr.'),
              'stsb': ('STS-B', 'Spearman')}
LEARNING_RATE_FIELD = 'trainer.optimizer_config.learning_rate.polynomial.initial_learning_rate'


@dataclasses.dataclass(frozen=True)
class FineTuneProtocol:
  """How every encoder is fine-tuned: the same for all of them, pretrained or not.

  Attributes:
    tasks: GLUE tasks (keys of `GLUE_TASKS`) in table order.
    seeds: runs 1..seeds at the chosen learning rate.
    epochs: passes over the (possibly subsampled) train set per run.
    size: runs `glue_<task>_<size>` (batch 32, 10% warm-up, linear decay, dropout 0.1).
    learning_rates: the grid seed 1 runs; its best rate is the one seeds 2..N run. The grid
      grew from 1e-4 and 3e-4 each time its top won most pairs: a best rate at the grid's edge
      leaves the optimum unknown.
    max_seq_length: T of the GLUE records, the mini encoder's 64 positions.
    lower_case: lowercase before WordPiece, as the corpus vocabulary is uncased.
    max_train_examples: (task, n): keep a seeded random subset of n train examples (SST-2's
      67,349 cut to 8,000, near CoLA's 8,551 and STS-B's 5,749, which are kept whole).
    subset_seed: seed of those subsets and of the held-out slices. Dev sets are always
      complete.
    pooling: (task, pooling): the head's input (`tasks.sentence_prediction_task.ModelConfig`);
      a task not listed gets 'cls', Model Garden's fresh dense+tanh head on [CLS].
    standardize_regression: regress STS-B on targets standardized by its train labels' mean and
      standard deviation (`meta_data.json`), predicting in label units.
    heldout_examples: train examples of each task set aside (after the subset) as a held-out
      slice; with it every run validates on the slice each epoch, dev is scored at the epoch
      the slice liked best and the learning rate is chosen by the slice too, so that nothing
      is chosen on dev. 0: dev scored after the last epoch, the rate chosen on dev.
  """
  tasks: tuple[str, ...] = ('sst2', 'cola', 'stsb')
  seeds: int = 3
  epochs: float = 3
  size: str = 'mini'
  learning_rates: tuple[float, ...] = (1e-4, 3e-4, 1e-3, 3e-3)
  max_seq_length: int = 64
  lower_case: bool = True
  max_train_examples: tuple[tuple[str, int], ...] = (('sst2', 8000),)
  subset_seed: int = 0
  pooling: tuple[tuple[str, str], ...] = ()
  standardize_regression: bool = False
  heldout_examples: int = 0

  def __post_init__(self):
    unknown = [task for task in self.tasks if task not in GLUE_TASKS]
    if unknown:
      raise ValueError(f'Unknown tasks {unknown}; use some of {", ".join(GLUE_TASKS)}.')
    if self.seeds < 1 or not self.learning_rates:
      raise ValueError(f'seeds={self.seeds} and learning_rates={self.learning_rates}: need at '
                       'least one seed and one learning rate.')

  def task_pooling(self, task: str) -> str:
    return dict(self.pooling).get(task, 'cls')


# 'cls_head': the papers' protocol at mini ([CLS] head, 3 epochs, dev after the last one, the rate
# chosen on dev), the ablation of 'pooled', which reads the tokens and chooses nothing on dev;
# single-seed pilots chose its heads and its 5 epochs (benchmarks/finetuning/protocol.md).
PROTOCOLS = {
    'cls_head': FineTuneProtocol(),
    'pooled': FineTuneProtocol(
        seeds=5, epochs=5, learning_rates=(1e-4, 3e-4, 1e-3),
        max_train_examples=(('sst2', 9000),), heldout_examples=1000,
        pooling=(('sst2', 'mean'), ('cola', 'mean'), ('stsb', 'siamese_cosine')),
        standardize_regression=True),
}
def format_rate(rate: Optional[float]) -> str:
  """1e-4 -> '1e-4', 2.5e-05 -> '2.5e-5'; None (not chosen yet) -> '?'."""
  if rate is None:
    return '?'
  mantissa, exponent = f'{rate:e}'.split('e')
  return f'{mantissa.rstrip("0").rstrip(".")}e{int(exponent)}'
