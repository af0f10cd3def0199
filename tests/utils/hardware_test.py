"""The machine reports name (`teams_tf/utils/hardware.py`)."""

import os
import platform
import unittest
from unittest import mock

from teams_tf.utils import hardware


class HardwareTest(unittest.TestCase):

  def test_description_names_the_cpu_model_and_the_cores(self):
    model = hardware.cpuinfo().get('model name')
    self.assertEqual(model or platform.processor() or platform.machine(), hardware.cpu_model())
    self.assertEqual(f'{hardware.cpu_model()}, {os.cpu_count()} cores', hardware.description())

  def test_without_proc_cpuinfo_the_platform_names_the_cpu(self):
    with mock.patch.object(hardware.os.path, 'exists', return_value=False), \
        mock.patch.object(hardware.platform, 'processor', return_value=''), \
        mock.patch.object(hardware.platform, 'machine', return_value='arm64'):
      self.assertEqual({}, hardware.cpuinfo())
      self.assertEqual('arm64', hardware.cpu_model())


if __name__ == '__main__':
  unittest.main()
