"""resume.build_trainer: the trainer `teams_tf.train` runs."""

import tensorflow as tf
import tf_keras

from official.core import exp_factory
from official.core import task_factory

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.training import resume


class BuildTrainerTest(tf.test.TestCase):

  def test_first_training_step_is_traced_once(self):
    # A step that creates the optimizer's slots would be traced twice: seconds of every start.
    params = exp_factory.get_exp_config('teams_demo')
    task = task_factory.get_task(params.task)
    trainer = resume.build_trainer(params, task, 'train', self.get_temp_dir(), 0)
    batch = next(iter(task.build_inputs(params.task.train_data)))
    step = tf.function(lambda inputs: task.train_step(inputs, trainer.model, trainer.optimizer))
    step(batch)
    step(batch)
    self.assertEqual(1, step.experimental_get_tracing_count())
    self.assertEqual(2, int(trainer.optimizer.iterations))

  def test_new_style_optimizers_are_left_to_build_in_their_first_step(self):
    self.assertFalse(resume.create_optimizer_variables(tf_keras.optimizers.SGD(0.1), []))


if __name__ == '__main__':
  tf.test.main()
