"""The research harness: benchmarks, the replication, probes, minimal pairs and their reports.

It imports the library (`teams_tf`) as any user does and is not installed with it (setup.py
packages only `teams_tf`); the harness entry points in tools/ import `lab_path` first, which puts
the clone on sys.path, and tests/lab tests it.
"""
