"""The experiments teams_tf registers with Model Garden's `exp_factory`, with their descriptions.

Every registered name goes through `register`, so that listing them (`--list_experiments`) and
describing one need nothing of `exp_factory`'s private table.
"""

from typing import Callable

from official.core import exp_factory

_DESCRIPTIONS: dict[str, str] = {}
# Names registered from outside the library (`experiments.register_variant`).
_RESEARCH: set[str] = set()
_FINETUNING: set[str] = set()


def register(name: str, description: str, factory: Callable, research: bool = False,
             finetuning: bool = False) -> None:
  """Registers `factory` (no arguments -> ExperimentConfig) as `name`, described in one line.

  Args:
    name: the experiment name.
    description: its one line.
    factory: builds its ExperimentConfig.
    research: registered by a research area, not by teams_tf (listed only on request).
    finetuning: a fine-tuning experiment (GLUE, SQuAD), not a pretraining one.
  """
  factory.__doc__ = description
  exp_factory.register_config_factory(name)(factory)
  _DESCRIPTIONS[name] = description
  if research:
    _RESEARCH.add(name)
  if finetuning:
    _FINETUNING.add(name)


def experiment_names(include_research: bool = True) -> list[str]:
  """Every name registered through `register`, sorted; the library's own alone when not
  `include_research` (what teams_tf registers whatever else was imported)."""
  return sorted(name for name in _DESCRIPTIONS if include_research or name not in _RESEARCH)


def is_pretraining(name: str) -> bool:
  """Whether `name` was registered as a pretraining experiment (not GLUE or SQuAD)."""
  return name in _DESCRIPTIONS and name not in _FINETUNING


def describe(name: str) -> str:
  """The one-line description `name` was registered with."""
  return _DESCRIPTIONS[name]
