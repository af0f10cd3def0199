"""oneDNN's CPU kernels: teams_tf's default, --op_determinism and the user's own setting."""

import os
import unittest
from unittest import mock

from teams_tf.utils import onednn

_MARK = onednn._MARK  # pylint: disable=protected-access


def _environment(**values):
  """os.environ without either variable, then `values` (None: left unset)."""
  cleared = {k: v for k, v in os.environ.items() if k not in (onednn.ENV, _MARK)}
  return mock.patch.dict(os.environ, {**cleared, **{k: v for k, v in values.items()
                                                    if v is not None}}, clear=True)


class OneDnnTest(unittest.TestCase):

  def _set(self, argv, machine, **values):
    with _environment(**values):
      onednn.set_default(argv, machine)
      return os.environ.get(onednn.ENV)

  def test_x86_cpus_get_onednn_and_op_determinism_gets_it_off(self):
    self.assertEqual('1', self._set(['--experiment=teams_demo'], 'x86_64'))
    self.assertEqual('1', self._set([], 'AMD64'))
    self.assertEqual('0', self._set(['--seed=1', '--op_determinism'], 'x86_64'))
    # Elsewhere (Arm) TensorFlow's own default stands.
    self.assertIsNone(self._set([], 'aarch64'))

  def test_the_users_value_is_kept(self):
    self.assertEqual('0', self._set([], 'x86_64', TF_ENABLE_ONEDNN_OPTS='0'))
    self.assertEqual('1', self._set(['--op_determinism'], 'x86_64', TF_ENABLE_ONEDNN_OPTS='1'))

  def test_a_child_process_tells_an_inherited_default_from_the_users_value(self):
    # A test or benchmark process set '1'; its `teams_tf.train --op_determinism` child inherits it.
    self.assertEqual('0', self._set(['--op_determinism'], 'x86_64', TF_ENABLE_ONEDNN_OPTS='1',
                                    **{_MARK: '1'}))
    # The user changed the variable after teams_tf had set it: theirs.
    self.assertEqual('1', self._set(['--op_determinism'], 'x86_64', TF_ENABLE_ONEDNN_OPTS='1',
                                    **{_MARK: '0'}))

  def test_the_log_line_says_which_kernels_this_process_runs(self):
    # tests/conftest.py set TF_ENABLE_ONEDNN_OPTS=0 before TensorFlow loaded, as a user may; the
    # e2e train test checks teams_tf's default "on" in a run started without it.
    self.assertEqual('off, as TF_ENABLE_ONEDNN_OPTS=0 sets it', onednn.describe())
    with mock.patch.dict(os.environ, {_MARK: '0'}):
      self.assertEqual('off, for --op_determinism', onednn.describe())
    with mock.patch.dict(os.environ, {onednn.ENV: '1'}):
      # Set after TensorFlow loaded: the line says the kernels did not follow it.
      self.assertTrue(onednn.describe().startswith(
          'off: TensorFlow was loaded before TF_ENABLE_ONEDNN_OPTS=1 was set'), onednn.describe())


if __name__ == '__main__':
  unittest.main()
