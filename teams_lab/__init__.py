"""The research harness: benchmarks, the replication, probes, minimal pairs and their reports.

It imports the library (`teams_tf`) as any user does and is not installed with it (setup.py
packages only `teams_tf`); the harness entry points in tools/ import `lab_path` first, which puts
the clone on sys.path, and tests/lab tests it.
"""

# Before any harness module loads TensorFlow: the CPU kernels teams_tf sets for its processes and
# their children (teams_tf/utils/onednn.py), so that a benchmark runs what a teams_tf run does.
import teams_tf
