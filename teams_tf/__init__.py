"""teams_tf: efficient text-encoder pretraining on TensorFlow Model Garden."""

import sys

from teams_tf.utils import onednn

# Before any teams_tf module loads TensorFlow, which reads the switch once (utils/onednn.py).
onednn.set_default(sys.argv[1:])
