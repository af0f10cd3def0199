"""The machine reports name (`teams_tf/utils/hardware.py`)."""

import os
import platform
import unittest
from unittest import mock

from teams_tf.utils import hardware

_ZEN4 = {'model name': 'AMD EPYC', 'cpu family': '25', 'model': '17',
         'flags': 'fpu sse avx2 avx512f avx512_bf16 avx512_vnni'}
_ZEN3 = {'model name': 'AMD EPYC', 'cpu family': '25', 'model': '1', 'flags': 'fpu sse avx2'}


class HardwareTest(unittest.TestCase):

  def test_description_names_the_cpu_model_and_the_cores(self):
    model = hardware.cpuinfo().get('model name')
    self.assertEqual(model or platform.processor() or platform.machine(), hardware.cpu_model())
    self.assertTrue(hardware.description().startswith(hardware.cpu_model()))
    self.assertTrue(hardware.description().endswith(f', {os.cpu_count()} cores'))

  def test_cpus_that_share_a_model_name_are_told_apart(self):
    descriptions = []
    for fields in (_ZEN4, _ZEN3):
      with mock.patch.object(hardware, 'cpuinfo', return_value=fields), \
          mock.patch.object(hardware.os, 'cpu_count', return_value=2):
        descriptions.append(hardware.description())
    self.assertEqual(['AMD EPYC (family 25 model 17; AVX-512, AVX512_BF16), 2 cores',
                      'AMD EPYC (family 25 model 1; no AVX-512), 2 cores'], descriptions)
    self.assertEqual('amd-epyc-family-25-model-17-avx-512-avx512-bf16-2-cores',
                     hardware.machine_key(descriptions[0]))

  def test_without_proc_cpuinfo_the_platform_names_the_cpu(self):
    with mock.patch.object(hardware.os.path, 'exists', return_value=False), \
        mock.patch.object(hardware.platform, 'processor', return_value=''), \
        mock.patch.object(hardware.platform, 'machine', return_value='arm64'), \
        mock.patch.object(hardware.os, 'cpu_count', return_value=8):
      self.assertEqual({}, hardware.cpuinfo())
      self.assertEqual('arm64', hardware.cpu_model())
      self.assertEqual('arm64, 8 cores', hardware.description())


if __name__ == '__main__':
  unittest.main()
