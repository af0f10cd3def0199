"""GLUE fine-tuning of the released encoders under one protocol, as the replication's units.

The releases in `benchmarks/encoders` (`released_runs`) fall into groups of one budget and one
pretraining seed (`bert_seed1`, `teams_seed1`, ... form `seed1`; `bert_3x_seed1` forms
`3x_seed1`). Each group is a `replication.Replication` whose encoders are the objectives of its
releases, each unpacked into a model_dir (`releases.resolve_model_dir`, the caller's `unpack`);
the `seed1` group also holds random init, in the shape of its BERT release (random init does not
depend on a pretraining run, so one set of runs serves every group). Units are the
replication's: seed 1 at each rate of the protocol's grid, then seeds 2..N at the chosen rate, one
committed result each, in `<out_dir>/<protocol>/<group>/<objective>/<task>_lr<rate>_seed<k>.json`;
their sweeps run in `<work_dir>/finetuning_<protocol>/...` and the GLUE records are converted
once per protocol with the releases' vocabulary (`replication.prepare_glue`).
"""

import collections
import dataclasses
import os
from typing import Callable, Optional

from teams_lab import finetune_protocols
from teams_lab import released_runs
from teams_lab import replication

# The group random init joins: the base budget, the first pretraining seed.
RANDOM_GROUP = 'seed1'


def group_name(budget: str, seed: int) -> str:
  """('', 1) -> 'seed1'; ('_3x', 2) -> '3x_seed2'."""
  return f'{budget.lstrip("_")}_seed{seed}' if budget else f'seed{seed}'


def group_budget(group: str) -> str:
  """'seed1' -> '', '3x_seed2' -> '_3x': the budget of a `group_name`, as release names spell it."""
  return '_' + group.rsplit('_seed', 1)[0] if '_seed' in group else ''


@dataclasses.dataclass(frozen=True)
class Group:
  """Releases of one budget and pretraining seed.

  Attributes:
    name: `group_name`.
    releases: objective -> its release directory.
    train_flops: the largest training FLOPs of the releases (each stops at the budget, within a
      step), recorded in every unit's settings.
    seed: the pretraining seed.
  """
  name: str
  releases: dict[str, str]
  train_flops: float
  seed: int


def groups(release_root: str) -> list[Group]:
  """The releases under `release_root`, grouped; base budget first, then by seed.

  Raises:
    ValueError: no release, or releases of other vocabularies (their GLUE records would differ).
  """
  found = released_runs.releases_in(release_root)
  if not found:
    raise ValueError(f'No release in {release_root}; make them with tools/release_encoders.py.')
  vocabularies = {release['sha256']['vocab.txt'] for release in found.values()}
  if len(vocabularies) > 1:
    raise ValueError(f'The releases in {release_root} have {len(vocabularies)} vocabularies; '
                     'fine-tune the releases of one vocabulary at a time (another --release_dir).')
  members = collections.defaultdict(dict)
  for name, release in found.items():
    objective, budget, seed = released_runs.parse_run(name)
    members[(budget, seed)][objective] = (os.path.join(release_root, name), release)
  found_groups = []
  for budget, seed in sorted(members, key=lambda key: (key[0] != '', key)):
    runs = members[(budget, seed)]
    found_groups.append(Group(
        group_name(budget, seed), {objective: path for objective, (path, _) in runs.items()},
        max(release['train_flops'] for _, release in runs.values()), seed))
  return found_groups


def encoders(group: Group) -> list[str]:
  """What a group fine-tunes: its objectives in the replication's order, then random init."""
  order = [encoder for encoder in replication.ENCODERS if encoder in group.releases]
  order += sorted(set(group.releases) - set(order))
  random = group.name == RANDOM_GROUP and replication.SHAPE_FROM in group.releases
  return order + ([replication.RANDOM] if random else [])


def select(found: list[Group], group_names: Optional[list[str]],
           encoder_names: Optional[list[str]]) -> list[tuple[Group, list[str]]]:
  """The (group, encoders) to fine-tune, in the order asked for.

  Args:
    found: `groups`.
    group_names: only these groups (`group_name`), in the release order; None keeps every group.
    encoder_names: only these encoders, in this order (so the unit that decides a claim can run
      first); None keeps each group's `encoders`.

  Raises:
    ValueError: a group or an encoder in none of the selected groups (a typo would otherwise
      fine-tune nothing and say nothing).
  """
  unknown = sorted(set(group_names or ()) - {group.name for group in found})
  if unknown:
    raise ValueError(f'No group {", ".join(unknown)} in the releases; they hold '
                     f'{", ".join(group.name for group in found)}.')
  chosen = [(group, encoders(group)) for group in found
            if not group_names or group.name in group_names]
  available = {encoder for _, names in chosen for encoder in names}
  unknown = [encoder for encoder in encoder_names or () if encoder not in available]
  if unknown:
    raise ValueError(f'No encoder {", ".join(unknown)} in the groups '
                     f'{", ".join(group.name for group, _ in chosen)}; they hold '
                     f'{", ".join(sorted(available))}.')
  if not encoder_names:
    return chosen
  work = [(group, [encoder for encoder in encoder_names if encoder in names])
          for group, names in chosen]
  return [(group, names) for group, names in work if names]


def glue_data(protocol: finetune_protocols.FineTuneProtocol, release: str, work_dir: str,
              glue_dir: Optional[str], convert: Callable[..., None], log=print) -> str:
  """The GLUE records' directory for the releases of `release`'s vocabulary under `protocol`.

  Args:
    protocol: its tasks, T, casing and train subsets.
    release: one release directory; its vocab.txt tokenizes the tasks.
    work_dir: where the records go (`replication.glue_data_dir`).
    glue_dir: the GLUE download, to convert the tasks not converted yet; None converts nothing.
    convert: as for `replication.prepare_glue`.

  Raises:
    ValueError: what `replication.prepare_glue` raises.
  """
  vocab_file = os.path.join(release, 'vocab.txt')
  with open(vocab_file) as f:
    vocab_size = sum(1 for line in f if line.strip())
  data_dir = replication.glue_data_dir(work_dir, vocab_size, protocol)
  if glue_dir is not None:
    replication.prepare_glue(protocol, glue_dir, vocab_file, data_dir, convert, log=log)
  return data_dir


def prepare(protocol_name: str, chosen: list[Group], glue_dir: str, out_dir: str, work_dir: str,
            convert: Callable[..., None], unpack: Callable[[str], str],
            log=print) -> list[replication.Replication]:
  """One `replication.Replication` per chosen group, the GLUE records converted and its
  committed results checked (`replication.check_committed`).

  Args:
    protocol_name: a key of `finetune_protocols.PROTOCOLS`.
    chosen: the groups to fine-tune (`select`'s, so a typo fails before any conversion).
    glue_dir: the GLUE download.
    out_dir: committed results go to `<out_dir>/<protocol_name>/<group>/`.
    work_dir: records and sweeps.
    convert: as for `replication.prepare_glue`.
    unpack: a release directory -> a model_dir of it (`releases.resolve_model_dir`).

  Raises:
    ValueError: an unknown protocol, or what `replication.prepare_glue` and `check_committed`
      raise.
  """
  if protocol_name not in finetune_protocols.PROTOCOLS:
    raise ValueError(f'Unknown protocol {protocol_name!r}; use one of '
                     f'{", ".join(finetune_protocols.PROTOCOLS)}.')
  protocol = finetune_protocols.PROTOCOLS[protocol_name]
  data_dir = glue_data(protocol, next(iter(chosen[0].releases.values())), work_dir, glue_dir,
                       convert, log=log)
  runs = []
  for group in chosen:
    run_dirs = {objective: unpack(path) for objective, path in group.releases.items()}
    runs.append(replication.Replication(
        protocol, os.path.join(out_dir, protocol_name, group.name),
        os.path.join(work_dir, f'finetuning_{protocol_name}'), data_dir, run_dirs,
        group.train_flops, group.seed))
    replication.check_committed(runs[-1], encoders(group))
  return runs


# Minutes of a `pooled` unit alone on 2 cores, before any has run (benchmarks/finetuning/
# protocol.md).
_UNIT_MINUTES = 4


def outlook(work: list[tuple[replication.Replication, list[str]]]) -> str:
  """What fine-tuning these (group, encoders) will run and about how long, printed first."""
  units, done = 0, []
  for run, names in work:
    for unit in replication.plan(run.protocol, run.out_dir, names):
      units += 1
      result = replication.read_unit(run.out_dir, unit)
      if result is not None:
        done.append(result)
  seconds = [result['total_seconds'] for result in done if 'total_seconds' in result]
  minutes = sum(seconds) / len(seconds) / 60 if seconds else _UNIT_MINUTES
  left = units - len(done)
  return (f'This fine-tunes {left} of {units} unit(s), about {minutes:.1f} minutes each on 2 '
          f'cores ({left * minutes / 60:.1f} hours); each result is kept as it ends, and '
          '--report_only rewrites the report from them in seconds.')
