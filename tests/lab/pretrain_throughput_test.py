"""The throughput benchmark: its tool's quick run, FLOP counts, Model Garden mappings, ratios."""

import json
import math
import os
import subprocess
import sys
import tempfile

import tensorflow as tf

from teams_lab import model_garden_peers
from teams_lab import pretrain_report
from teams_lab import pretrain_throughput
from teams_lab import pretrain_variants
from teams_lab import time_to_accuracy
from teams_tf.training import experiment_flops
from teams_tf.training import flops
from teams_tf.utils import hardware
from tests import testing_utils

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

_B, _T, _P = 4, 32, 5


def _layer(b, t, h, i):
  """Forward FLOPs of one transformer layer: QKV + output projections, FFN, QK^T and AV."""
  return 2 * b * t * (4 * h * h + 2 * h * i) + 4 * b * t * t * h


def _teams_flops(b, t, p, v, layers, h, e, i, generator_layers, k, official=False):
  """TEAMS step FLOPs by hand: 3 x forward of generator, MLM head, discriminator and heads."""
  projection = 2 * b * t * e * h if e != h else 0  # each encoder maps E to H
  generator = generator_layers * _layer(b, t, h, i) + projection
  mlm = 2 * b * p * h * e + 2 * b * p * e * v
  discriminator = layers * _layer(b, t, h, i) + projection
  rtd_head = _layer(b, t, h, i) + 2 * b * t * h  # one transformer layer and the logit
  if official:
    rtd_head += 2 * b * t * h * h  # Model Garden's extra dense before the logit
  mws_head = 2 * b * p * h * e + 2 * b * p * (k + 1) * e  # transform, then K + 1 candidates
  return 3 * (generator + mlm + discriminator + rtd_head + mws_head)


def _bert_demo_flops(vocab_size):
  """BERT demo step FLOPs by hand: L=4, H=64, E=32, I=256 at B, T, P."""
  encoder = 4 * _layer(_B, _T, 64, 256) + 2 * _B * _T * 32 * 64
  mlm = 2 * _B * _P * 64 * 32 + 2 * _B * _P * 32 * vocab_size
  return 3 * (encoder + mlm)


def _result(implementation, objective, setting, examples_per_second, rss=1000.0):
  return dict(implementation=implementation, objective=objective, size='small', setting=setting,
              status='ok', examples_per_second=examples_per_second,
              steps_per_second=examples_per_second / 32,
              step_seconds_median=32 / examples_per_second, peak_rss_mib=rss,
              fraction_of_float32_peak=examples_per_second / 40)


class BenchmarkPretrainTest(tf.test.TestCase):

  def test_quick_run_writes_rows_throughputs_and_flops(self):
    output_dir = tempfile.mkdtemp(dir=self.get_temp_dir())
    run = subprocess.run(
        [sys.executable, 'tools/benchmark_pretrain.py', '--objectives=bert', '--sizes=tiny',
         '--settings=fp32', '--implementations=ours', '--steps=2', '--warmup=1',
         f'--batch_size={_B}', f'--seq_length={_T}', f'--max_predictions={_P}',
         '--peak_matmul_size=256', '--peak_repeats=2', '--noremeasure_peak',
         f'--output_dir={output_dir}'],
        cwd=_ROOT, capture_output=True, text=True, check=False)
    self.assertEqual(0, run.returncode, run.stderr[-3000:])
    self.assertIn('[1/1] ours bert tiny fp32: step 2/2', run.stderr)
    self.assertIn('ETA', run.stderr)
    with open(os.path.join(output_dir, 'pretrain_throughput.json')) as f:
      report = json.load(f)
    with open(os.path.join(output_dir, 'pretrain_throughput.md')) as f:
      markdown = f.read()

    self.assertLen(report['results'], 1)
    result = report['results'][0]
    self.assertEqual(('ours', 'bert', 'tiny', 'fp32', 'ok'),
                     tuple(result[k] for k in ('implementation', 'objective', 'size', 'setting',
                                               'status')))
    for field in ('examples_per_second', 'tokens_per_second', 'steps_per_second',
                  'gflops_per_second', 'fraction_of_float32_peak', 'peak_rss_mib'):
      self.assertTrue(math.isfinite(result[field]) and result[field] > 0, (field, result[field]))
    self.assertLen(result['step_seconds'], 2)
    self.assertAllClose(result['examples_per_second'], _B / result['step_seconds_median'])
    self.assertAllClose(result['tokens_per_second'], _T * result['examples_per_second'])
    self.assertTrue(result['finite'])
    self.assertEqual(_bert_demo_flops(testing_utils.sample_vocab_size()),
                     result['flops_per_step'])
    self.assertAllClose(result['gflops_per_second'],
                        result['flops_per_step'] / result['step_seconds_median'] / 1e9)
    peaks = report['peak_gflops']['used']
    self.assertGreater(peaks['float32'], 0)
    self.assertGreater(peaks['bfloat16'], 0)
    self.assertAllClose(result['fraction_of_float32_peak'],
                        result['gflops_per_second'] / peaks['float32'])

    ratios = {(r['name'], r['column']): r['value'] for r in report['ratios']}
    self.assertEqual(len(pretrain_report.RATIOS) * 4, len(ratios))  # fp32 + 3 summaries
    self.assertIsNone(ratios[('teams_ours_over_official', 'fp32')])  # neither side was run
    self.assertEqual([], report['targets'])  # the targets are for small
    self.assertIn('--objectives=bert', report['command'])
    self.assertEqual(os.cpu_count(), report['machine']['cpus'])
    self.assertEqual(tf.__version__, report['machine']['tensorflow'])
    # The brand alone ('AMD EPYC') names CPUs with and without AVX-512: minutes need the signature.
    signature = hardware.cpu_signature()  # '' where /proc/cpuinfo has no CPU family
    self.assertEqual(signature, report['machine']['signature'])
    self.assertIn(f'Machine: {hardware.cpu_model()}{f" ({signature})" if signature else ""}, ',
                  markdown)
    self.assertIn('| ours | bert | fp32 |', markdown)
    self.assertIn('| TEAMS ours / Model Garden TEAMS, examples/s | n/a |', markdown)
    self.assertIn('layer(T)     = 2·B·T·(4H² + 2HI) + 4·B·T²·H', markdown)

  def test_teams_flops_ours_and_official(self):
    vocab_size = testing_utils.sample_vocab_size()
    params = pretrain_variants.experiment_params('teams', 'tiny', _T, _B, _P, 0)
    objective, shapes = pretrain_variants.our_shapes(
        params.task.model, _B, _T, _P)
    self.assertEqual(_teams_flops(_B, _T, _P, vocab_size, layers=4, h=64, e=32, i=256,
                                  generator_layers=2, k=5),
                     flops.step_flops(objective, shapes)[0])
    # Model Garden TEAMS at teams_small, B=32, T=128, P=20, V=30522: issue 9's ≈ 416 GFLOP.
    params = pretrain_variants.experiment_params('teams', 'small', 128, 32, 20, 30522)
    objective, shapes = pretrain_variants.our_shapes(
        params.task.model, 32, 128, 20)
    official = _teams_flops(32, 128, 20, 30522, layers=12, h=256, e=128, i=1024,
                            generator_layers=6, k=5, official=True)
    self.assertEqual(official, flops.step_flops(
        objective, dict(shapes, rtd_head='official_attention'))[0])
    self.assertAllClose(416.3, official / 1e9, atol=0.05)

  def test_mini_is_the_time_to_accuracy_recipe_and_ours_only(self):
    # Profiling `--size=mini` must time the step whose minutes the time-to-accuracy table holds.
    recipe = time_to_accuracy.recipe(time_to_accuracy.Setup(
        train_input='', validation_input='', vocab_file='', vocab_size=7899, work_dir='',
        out_dir=''))
    data = recipe.task.train_data
    params = pretrain_variants.experiment_params(
        'bert', 'mini', data.seq_length, data.global_batch_size, data.max_predictions_per_seq,
        7899)
    self.assertEqual(recipe.task.model.as_dict(), params.task.model.as_dict())
    shapes = pretrain_variants.our_shapes(params.task.model, data.global_batch_size,
                                          data.seq_length, data.max_predictions_per_seq)
    self.assertEqual(experiment_flops.step_flops(recipe), flops.step_flops(*shapes)[0])
    with self.assertRaisesRegex(ValueError, "size 'mini'.*'tiny' or 'small'"):
      pretrain_variants.build_tf_step(dict(implementation='official', objective='teams',
                                           size='mini', setting='fp32'))
    with self.assertRaisesRegex(ValueError, 'implementations=ours,train'):
      pretrain_throughput.check(pretrain_throughput.Settings(sizes=('mini',)))

  def test_official_teams_config_matches_teams_small(self):
    params = pretrain_variants.experiment_params('teams', 'small', 128, 32, 20, 30522)
    official = model_garden_peers.official_teams_config(params.task.model)
    self.assertEqual(6, official.candidate_size)  # K = 5 negatives + the original
    self.assertEqual(3, official.num_shared_generator_hidden_layers)
    self.assertEqual(11, official.num_discriminator_task_agnostic_layers)  # RTD head on L - 1
    self.assertEqual((5.0, 2.0, 1.0), (official.discriminator_rtd_loss_weight,
                                       official.discriminator_mws_loss_weight,
                                       official.generator_loss_weight))
    self.assertEqual((12, 6), (official.discriminator.num_layers, official.generator.num_layers))
    for config in (official.generator, official.discriminator):
      self.assertEqual((256, 128, 1024, 4, 30522),
                       (config.hidden_size, config.embedding_size, config.intermediate_size,
                        config.num_attention_heads, config.vocab_size))
    self.assertEqual(128, params.task.train_data.seq_length)
    self.assertEqual(32, params.task.train_data.global_batch_size)

  def test_official_electra_config_matches_electra_small(self):
    params = pretrain_variants.experiment_params('electra', 'small', 128, 32, 20, 30522)
    official = model_garden_peers.official_electra_config(params.task.model, 128, 20)
    generator, discriminator = official.generator_encoder.bert, official.discriminator_encoder.bert
    self.assertEqual((64, 128, 256, 1, 12), (generator.hidden_size, generator.embedding_size,
                                             generator.intermediate_size,
                                             generator.num_attention_heads, generator.num_layers))
    self.assertEqual((256, 12), (discriminator.hidden_size, discriminator.num_layers))
    self.assertEqual(50.0, official.discriminator_loss_weight)
    self.assertEqual([], official.cls_heads)

  def test_default_settings_are_what_teams_tf_train_picks_on_the_cpu(self):
    settings = pretrain_throughput.Settings(sizes=('tiny', 'small'))
    # The paper sizes train in bfloat16 where the CPU has it natively, else in float32.
    self.assertEqual({'tiny': 'fp32', 'small': 'bf16'},
                     pretrain_throughput._default_settings(settings, ['avx2', 'avx512_bf16']))  # pylint: disable=protected-access
    self.assertEqual({'tiny': 'fp32', 'small': 'fp32'},
                     pretrain_throughput._default_settings(settings, ['avx2', 'fma']))  # pylint: disable=protected-access

  def test_ratios_and_targets(self):
    results = [
        _result('ours', 'teams', 'bf16', 15.0, rss=900.0),
        _result('ours', 'teams', 'fp32', 12.0),
        _result('official', 'teams', 'fp32', 10.0, rss=1000.0),
        dict(implementation='official', objective='teams', size='small', setting='bf16',
             status='failed', error='TypeError'),
        _result('ours', 'electra_teams_generator', 'bf16', 16.0),
        _result('ours', 'electra_teams_generator', 'fp32', 13.0),
        _result('ours', 'bert', 'bf16', 30.0),
        _result('ours', 'electra', 'bf16', 20.0),
        _result('ours', 'script', 'bf16', 12.0),
    ]
    report = pretrain_report.ratios(results, {'small': 'bf16'}, ['fp32', 'bf16'])
    ratios = {(r['name'], r['column']): r['value'] for r in report['ratios']}
    self.assertAllClose(1.5, ratios[('teams_ours_over_official', 'default')])  # bf16 / fp32
    self.assertAllClose(1.2, ratios[('teams_ours_over_official', 'best_float32')])
    self.assertIsNone(ratios[('teams_ours_over_official', 'bf16')])  # official failed
    self.assertAllClose(0.9, ratios[('teams_memory_ours_over_official', 'default')])
    self.assertAllClose(16 / 15 - 1, ratios[('teams_overhead_over_electra', 'best')])
    self.assertAllClose(15 / 40, ratios[('teams_fraction_of_float32_peak', 'best')])
    self.assertAllClose(0.6, ratios[('script_over_electra', 'best')])
    self.assertAllClose(30 / 2 / 20, ratios[('script_bound_over_electra', 'best')])
    targets = {(t['name'], t['column']): t['met'] for t in report['targets']}
    self.assertTrue(targets[('teams_ours_over_official', 'default')])
    self.assertFalse(targets[('teams_ours_over_official', 'best_float32')])
    self.assertTrue(targets[('teams_overhead_over_electra', 'best')])
    self.assertFalse(targets[('teams_fraction_of_float32_peak', 'best')])
    self.assertFalse(targets[('script_over_electra', 'best')])
    self.assertIsNone(targets[('electra_ours_over_hf', 'best')])  # not measured
    self.assertIsNone(targets[('teams_train_over_step', 'best')])  # not measured

  def test_end_to_end_ratio_compares_the_same_setting_and_has_its_table(self):
    results = [
        _result('ours', 'teams', 'bf16', 16.0),
        _result('ours', 'teams', 'fp32', 20.0),  # faster, but not what teams_tf.train ran
        dict(_result('train', 'teams', 'bf16', 14.0), first_step_seconds=30.0,
             loop_steps_per_second=[0.1, 0.44, 0.43], losses=[9.5, 9.1, 8.7], finite=True),
    ]
    report = pretrain_report.ratios(results, {'small': 'bf16'}, ['fp32', 'bf16'])
    ratios = {(r['name'], r['column']): r['value'] for r in report['ratios']}
    for column in ('default', 'best', 'bf16'):
      self.assertAllClose(14 / 16, ratios[('teams_train_over_step', column)])
    self.assertIsNone(ratios[('teams_train_over_step', 'fp32')])
    target = next(t for t in report['targets'] if t['name'] == 'teams_train_over_step')
    self.assertEqual((False, 0.9), (target['met'], target['threshold']))

    table = pretrain_report._end_to_end_table(results, 'small')  # pylint: disable=protected-access
    self.assertLen(table, 3)
    self.assertEqual('| teams | bf16 | 0.438 | 0.500 | 0.88 | 30.0 | 0.10, 0.44, 0.43 | 1,000 | '
                     '9.500 -> 8.700 |', table[2])
    # The step table holds fixed-batch steps only.
    self.assertLen(pretrain_report._results_table(results[2:], 'small'), 2)  # pylint: disable=protected-access


if __name__ == '__main__':
  tf.test.main()
