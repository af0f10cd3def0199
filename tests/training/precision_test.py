"""The runtime precision follows the hardware where the user did not choose it."""

from unittest import mock

from absl import flags
import tensorflow as tf

from official.core import exp_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.training import precision

_NO_BF16 = ['fpu', 'avx2', 'avx512f', 'avx512_vnni']


class PrecisionTest(tf.test.TestCase):

  def test_bfloat16_default_becomes_float32_on_a_cpu_without_native_bfloat16(self):
    dtype, why = precision.choose('bfloat16', False, False, _NO_BF16)
    self.assertIsNone(dtype)
    self.assertIn('no native bfloat16', why)
    self.assertIn('runtime.mixed_precision_dtype=bfloat16', why)  # How to keep it.

  def test_bfloat16_is_kept_where_it_is_native_chosen_or_on_an_accelerator(self):
    self.assertEqual(precision.choose('bfloat16', False, False, [*_NO_BF16, 'amx_bf16']),
                     ('bfloat16', "bfloat16, the experiment's default: this CPU has amx_bf16"))
    self.assertEqual(precision.choose('bfloat16', True, False, _NO_BF16)[0], 'bfloat16')
    self.assertEqual(precision.choose('bfloat16', False, True, _NO_BF16)[0], 'bfloat16')

  def test_other_precisions_are_kept(self):
    self.assertEqual(precision.choose(None, False, False, _NO_BF16),
                     (None, 'float32, as configured'))
    self.assertEqual(precision.choose('float16', False, False, _NO_BF16)[0], 'float16')

  def test_a_tpu_strategy_or_a_visible_gpu_is_an_accelerator(self):
    self.assertTrue(precision.has_accelerator('tpu'))
    on_gpu = bool(tf.config.list_physical_devices('GPU'))
    self.assertEqual(precision.has_accelerator('mirrored'), on_gpu)
    self.assertEqual(precision.has_accelerator(), on_gpu)

  def test_train_picks_float32_for_a_paper_experiment_moved_to_this_cpu(self):
    from teams_tf import train  # pylint: disable=g-import-not-at-top
    if 'experiment' not in flags.FLAGS:
      train.define_flags()
    params = exp_factory.get_exp_config('teams_small')
    self.assertEqual(params.runtime.mixed_precision_dtype, 'bfloat16')
    params.runtime.distribution_strategy = 'mirrored'
    cpu = {'flags': ' '.join(_NO_BF16)}
    chosen = {}
    for override in ('runtime.distribution_strategy=mirrored',
                     'runtime.mixed_precision_dtype=bfloat16'):
      run = params.replace()
      was_parsed = flags.FLAGS.is_parsed()
      try:
        flags.FLAGS.unparse_flags()
        flags.FLAGS(['teams_tf.train', '--experiment=teams_small', '--mode=train',
                     '--model_dir=unused', f'--params_override={override}'])
        with mock.patch.object(train.hardware, 'cpuinfo', return_value=cpu):
          train._choose_precision(run)  # pylint: disable=protected-access
      finally:
        flags.FLAGS.unparse_flags()
        if was_parsed:
          flags.FLAGS.mark_as_parsed()
      chosen[override] = run.runtime.mixed_precision_dtype
    self.assertEqual(chosen, {'runtime.distribution_strategy=mirrored': None,
                              'runtime.mixed_precision_dtype=bfloat16': 'bfloat16'})


if __name__ == '__main__':
  tf.test.main()
