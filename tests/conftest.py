"""pytest collection tweaks shared by all tests."""


def pytest_collection_modifyitems(items):
  # tf.test.TestCase inherits a deprecated `test_session` context manager that pytest would
  # collect and report as a skipped test.
  items[:] = [item for item in items if item.name != 'test_session']

