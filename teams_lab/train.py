"""`teams_tf.train` with the research variants registered (`teams_lab.research_variants`).

  python -m teams_lab.train --experiment=electra_mini_rtd10 --mode=train_and_eval --model_dir=D

Every flag is `teams_tf.train`'s; run it from the clone's root (or with the clone on PYTHONPATH:
teams_lab is not installed). The learning benchmark trains every mini run with it.
"""

from teams_lab import research_variants  # noqa: F401  (registers the variants)
from teams_tf import train

if __name__ == '__main__':
  train.run()
