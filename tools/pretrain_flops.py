"""The analytic FLOP counter of the benchmark tools; it lives in `teams_tf.training.flops`.

Kept so that the tools (and their tests) import it by its old name. It has no TensorFlow
dependency: the benchmark's PyTorch process imports it.
"""

from teams_tf.training.flops import FORMULA  # pylint: disable=unused-import
from teams_tf.training.flops import FORWARD_ONLY  # pylint: disable=unused-import
from teams_tf.training.flops import TRAIN  # pylint: disable=unused-import
from teams_tf.training.flops import encoder_forward  # pylint: disable=unused-import
from teams_tf.training.flops import layer_forward  # pylint: disable=unused-import
from teams_tf.training.flops import mlm_head_forward  # pylint: disable=unused-import
from teams_tf.training.flops import step_flops  # pylint: disable=unused-import
