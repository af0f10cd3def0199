"""The command-line tools, installed as console scripts (`teams-*`, setup.py)."""
