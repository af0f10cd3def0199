"""Gaps and the Markdown report of `tools/compare_loss_curves.py` (no flags, no TensorFlow)."""

import itertools
import statistics

# Loss term -> the metric that reports it, per implementation; 'total' is what the step returns.
TERMS = {
    'mlm': {'ours': 'mlm_loss', 'official': 'masked_lm_loss'},
    'rtd': {'ours': 'rtd_loss', 'official': 'replaced_token_detection_loss'},
    'mws': {'ours': 'mws_loss', 'official': 'multiword_selection_loss'},
    'total': None,
}
IMPLEMENTATIONS = ('ours', 'official')


def windows(values, window):
  """Means of consecutive windows of `window` steps."""
  return [statistics.mean(values[i:i + window]) for i in range(0, len(values), window)]


def gaps(runs, seeds, window):
  """Per term: mean |difference| of windowed curves over the second half of training.

  `implementations`: ours vs official at the same seed, averaged over seeds; `seeds_<impl>`:
  every pair of seeds of one implementation, averaged over pairs.
  """
  def gap(a, b):
    a, b = windows(a, window), windows(b, window)
    half = len(a) // 2
    return statistics.mean(abs(x - y) for x, y in zip(a[half:], b[half:]))

  result = {}
  for term in TERMS:
    row = dict(implementations=statistics.mean(
        gap(runs[('ours', s)][term], runs[('official', s)][term]) for s in seeds))
    for implementation in IMPLEMENTATIONS:
      row[f'seeds_{implementation}'] = statistics.mean(
          gap(runs[(implementation, a)][term], runs[(implementation, b)][term])
          for a, b in itertools.combinations(seeds, 2))
    row['within_noise'] = row['implementations'] <= max(
        row[f'seeds_{implementation}'] for implementation in IMPLEMENTATIONS)
    result[term] = row
  return result


def markdown(report):
  """The results file: the comparison table, then every run's windowed curve."""
  window = report['window']
  lines = [
      '# Loss curves: our TEAMS vs Model Garden TEAMS, same seeds and data', '',
      f'Command: `{report["command"]}`', '',
      f'Size {report["size"]} ({report["setting"]}), B={report["batch_size"]}, '
      f'T={report["seq_length"]}, P={report["max_predictions"]}, {report["steps"]} steps of '
      'the experiment\'s AdamW schedule on batches of the embedded sample corpus; seeds '
      f'{", ".join(map(str, report["seeds"]))}, each fixing the weights, the sampling and the '
      'batches (masks, text order), the same for both implementations. Gaps: mean absolute '
      f'difference of {window}-step means over the second half of training.', '',
      '| loss | ours vs Model Garden, same seed | ours, seed vs seed | Model Garden, seed vs '
      'seed | within noise |', '|---|---|---|---|---|']
  for term, row in report['gaps'].items():
    lines.append(f'| {term} | {row["implementations"]:.4f} | {row["seeds_ours"]:.4f} | '
                 f'{row["seeds_official"]:.4f} | {"yes" if row["within_noise"] else "NO"} |')
  lines += ['', f'## Curves ({window}-step means)', '']
  for term in TERMS:
    runs = report['curves']
    keys = sorted(runs)
    lines += [f'### {term}', '', '| steps | ' + ' | '.join(keys) + ' |',
              '|---|' + '---|' * len(keys)]
    points = {key: windows(runs[key][term], window) for key in keys}
    for i in range(len(points[keys[0]])):
      lines.append(f'| {i * window + 1}-{min((i + 1) * window, report["steps"])} | ' +
                   ' | '.join(f'{points[key][i]:.4f}' for key in keys) + ' |')
    lines.append('')
  lines += ['Model Garden\'s TEAMS differs from ours where `tools/benchmark_pretrain.py` lists '
            '(its RTD head adds a dense layer; its embedding projection is shared; its '
            'candidates come from K argmax-and-penalise passes), so equal curves are not '
            'expected step for step, only within the spread that the seed alone causes.', '']
  return '\n'.join(lines)
