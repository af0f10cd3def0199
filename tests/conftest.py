"""pytest set-up shared by all tests."""

# Before any test module loads TensorFlow, so that the tests run the CPU kernels a teams_tf program
# runs (teams_tf/utils/onednn.py).
import teams_tf


def pytest_collection_modifyitems(items):
  # tf.test.TestCase inherits a deprecated `test_session` context manager that pytest would
  # collect and report as a skipped test.
  items[:] = [item for item in items if item.name != 'test_session']
