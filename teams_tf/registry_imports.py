"""The one module that imports everything registering tasks and experiments (STYLE.md §9)."""

# pylint: disable=unused-import
from teams_tf.networks import shared_encoders  # binds the relative-position encoder builder
from teams_tf.registry import experiments
from teams_tf.registry import finetune_experiments
from teams_tf.tasks import coco_lm_task
from teams_tf.tasks import mlm_task
from teams_tf.tasks import script_task
from teams_tf.tasks import sentence_prediction_task
from teams_tf.tasks import taco_task
from teams_tf.tasks import teams_task
