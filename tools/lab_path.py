"""Puts the clone on sys.path, so that a harness tool imports `teams_lab`, which is not installed.

Python puts a script's own folder (tools/) first on sys.path; the harness tools import this
module before `teams_lab`, and it adds the folder above (the clone's root).
"""

import os
import sys

_CLONE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _CLONE not in sys.path:
  sys.path.insert(1, _CLONE)
