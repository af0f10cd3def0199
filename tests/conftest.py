"""pytest set-up shared by all tests."""

import os

# The tests run TensorFlow's own CPU kernels, not the oneDNN ones teams_tf turns on for its
# programs on x86 CPUs (teams_tf/utils/onednn.py): for runs of a few steps, oneDNN's graph
# rewrites cost more than its kernels save (two teams_demo runs of 4 and 2 steps: 97 s with it,
# 65 s without, on a 2-core AVX2 AMD EPYC). Set before anything loads TensorFlow; child processes
# inherit it as a user's value. The default itself is tested in processes started without it
# (testing_utils.default_kernels_environment).
os.environ['TF_ENABLE_ONEDNN_OPTS'] = '0'


def pytest_collection_modifyitems(items):
  # tf.test.TestCase inherits a deprecated `test_session` context manager that pytest would
  # collect and report as a skipped test.
  items[:] = [item for item in items if item.name != 'test_session']
