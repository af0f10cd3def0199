"""pytest collection tweaks and per-test isolation shared by all tests."""

import pytest
import tf_keras


def pytest_collection_modifyitems(items):
  # tf.test.TestCase inherits a deprecated `test_session` context manager that pytest would
  # collect and report as a skipped test.
  items[:] = [item for item in items if item.name != 'test_session']


@pytest.fixture(autouse=True)
def _float32_keras_policy():
  # Keras' dtype policy is process-wide, and a test that runs `teams_tf.train` in this process on
  # a bfloat16 experiment (e.g. one refused for want of a TPU) sets it before failing; under
  # `-n 2 --dist=loadscope` whichever tests share that worker afterwards would build bfloat16
  # layers and miss their float32 tolerances.
  tf_keras.mixed_precision.set_global_policy('float32')
  yield
  tf_keras.mixed_precision.set_global_policy('float32')
