"""Replica-invariant noise: rows of one global draw, uniform, and a checkpointed seed stream."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from teams_tf.ops import replica_random


class UniformTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.parameters([4, 3, 5], [6, 7], [5, 2, 2])
  def test_any_slice_of_rows_is_the_same_slice_of_the_global_draw(self, *shape):
    seed = [3, 11]
    whole = replica_random.uniform(shape, seed).numpy()
    self.assertEqual(tuple(shape), whole.shape)
    for offset, rows in ((0, 1), (1, 2), (2, shape[0] - 2), (shape[0] - 1, 1)):
      part = replica_random.uniform([rows] + list(shape[1:]), seed, row_offset=offset)
      self.assertAllEqual(whole[offset:offset + rows], part)

  def test_uniform_on_the_unit_interval_and_independent_across_rows(self):
    draw = replica_random.uniform(tf.constant([400, 250]), [1, 2]).numpy()
    self.assertTrue(np.all((draw >= 0) & (draw < 1)))
    # 100,000 draws in 10 bins: chi-square with 9 degrees of freedom, p = 0.001 at 27.9.
    counts = np.histogram(draw, bins=10, range=(0, 1))[0]
    expected = draw.size / 10
    self.assertLess(np.sum((counts - expected) ** 2 / expected), 27.9)
    # Consecutive rows are consecutive counter blocks, not shifted copies of one another.
    correlation = np.corrcoef(draw[:-1].ravel(), draw[1:].ravel())[0, 1]
    self.assertLess(abs(correlation), 0.02)

  def test_seed_decides_the_draw(self):
    first = replica_random.uniform([2, 8], [5, 6])
    self.assertAllEqual(first, replica_random.uniform([2, 8], [5, 6]))
    self.assertNotAllEqual(first, replica_random.uniform([2, 8], [5, 7]))
    self.assertNotAllEqual(first, replica_random.uniform([2, 8], [6, 6]))

  def test_works_inside_a_compiled_function(self):
    whole = tf.function(lambda: replica_random.uniform([4, 6], [1, 1]), jit_compile=True)()
    part = tf.function(lambda: replica_random.uniform([2, 6], [1, 1], row_offset=2),
                       jit_compile=True)()
    # XLA lays the Philox stream out its own way, but slices still agree within XLA.
    self.assertAllEqual(whole.numpy()[2:], part)


class SeedStreamTest(tf.test.TestCase):

  def test_each_call_a_new_seed_and_a_checkpoint_resumes_the_stream(self):
    stream = replica_random.SeedStream(seed=9)
    first, second = stream.next(), stream.next()
    self.assertEqual((1, 2), tuple(first.shape))
    self.assertNotAllEqual(first, second)
    self.assertEqual((3, 2), tuple(stream.next(3).shape))
    path = tf.train.Checkpoint(stream=stream).save(self.get_temp_dir() + '/ckpt')
    expected = stream.next()
    restored = replica_random.SeedStream(seed=0)
    tf.train.Checkpoint(stream=restored).restore(path).assert_consumed()
    self.assertAllEqual(expected, restored.next())

  def test_same_seed_same_stream_no_seed_differs(self):
    self.assertAllEqual(replica_random.SeedStream(seed=4).next(),
                        replica_random.SeedStream(seed=4).next())
    self.assertNotAllEqual(replica_random.SeedStream().next(), replica_random.SeedStream().next())


if __name__ == '__main__':
  tf.test.main()
