"""The command lines reports name (`teams_tf/utils/command_lines.py`)."""

import os
import unittest
from unittest import mock

from absl import flags

from teams_tf.utils import command_lines


class ToolCommandTest(unittest.TestCase):

  def _flags(self, root, argv):
    values = flags.FlagValues()
    holders = (
        flags.DEFINE_integer('bert_steps', 9000, '', flag_values=values),
        flags.DEFINE_integer('pretraining_seed', None, '', flag_values=values),
        flags.DEFINE_enum('pooling', 'mean', ['mean', 'cls'], '', flag_values=values),
        flags.DEFINE_string('out_dir', os.path.join(root, 'benchmarks', '..', 'benchmarks', 'r'),
                            '', flag_values=values))
    values(['tool'] + argv)
    return holders

  def test_defaults_are_left_out_unless_always_written(self):
    root = '/repo'
    steps, seed, pooling, out_dir = self._flags(root, [])
    tool = os.path.join(root, 'tools', 'replicate.py')
    self.assertEqual('python tools/replicate.py --bert_steps=9000',
                     command_lines.tool_command(tool, (steps, seed, pooling, out_dir),
                                                always=(steps,)))
    # The default path written another way is the same place.
    *_, out_dir = self._flags(root, ['--out_dir=/repo/benchmarks/r'])
    self.assertEqual('python tools/replicate.py', command_lines.tool_command(tool, (out_dir,)))

  def test_changed_flags_are_written_and_paths_relative_to_the_repository(self):
    root = '/repo'
    holders = self._flags(root, ['--bert_steps=18000', '--pretraining_seed=2', '--pooling=cls',
                                 '--out_dir=/repo/benchmarks/replication_seed2'])
    self.assertEqual('python tools/probe.py --bert_steps=18000 --pretraining_seed=2 '
                     '--pooling=cls --out_dir=benchmarks/replication_seed2',
                     command_lines.tool_command(os.path.join(root, 'tools', 'probe.py'),
                                                holders))
    values = flags.FlagValues()
    sweeps = flags.DEFINE_list('other_sweeps', [], '', flag_values=values)
    values(['tool', '--other_sweeps=benchmarks/a,benchmarks/b'])
    self.assertEqual('python tools/probe.py --other_sweeps=benchmarks/a,benchmarks/b',
                     command_lines.tool_command(os.path.join(root, 'tools', 'probe.py'),
                                                (sweeps,)))
    *_, out_dir = self._flags(root, ['--out_dir=/tmp/r'])
    self.assertEqual('python tools/probe.py --out_dir=/tmp/r',
                     command_lines.tool_command(os.path.join(root, 'tools', 'probe.py'),
                                                (out_dir,)))


class RequiredInputTest(unittest.TestCase):

  def test_an_input_outside_the_repository_is_passed_or_named_in_one_line(self):
    values = flags.FlagValues()
    glue_dir = flags.DEFINE_string('glue_dir', None, 'GLUE download with SST-2/.',
                                   flag_values=values)
    values(['tool'])
    with mock.patch.object(flags, 'FLAGS', values):
      with self.assertRaises(SystemExit) as raised:
        command_lines.required(glue_dir, '../shared/data/glue')
      self.assertEqual('error: pass --glue_dir=<GLUE download with SST-2/>, e.g. '
                       '--glue_dir=../shared/data/glue', str(raised.exception))
      values(['tool', '--glue_dir=/data/glue'])
      self.assertEqual('/data/glue', command_lines.required(glue_dir, '../shared/data/glue'))

  def test_work_directories_default_inside_the_clone(self):
    self.assertEqual('/repo/.work/learning',
                     command_lines.scratch_dir('/repo/tools/replicate.py', 'learning'))


if __name__ == '__main__':
  unittest.main()
