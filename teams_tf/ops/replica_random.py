"""Randomness that does not depend on how the global batch is split over replicas.

Every sampler here (TEAMS' candidates, SCRIPT's Gumbel-softmax, COCO-LM's replacements and
crops, TACO's token pairs) draws its noise with `uniform`: the rows of one counter-based
(Philox) draw over the whole global batch, of which each replica computes only its own rows.
The seed comes from a `SeedStream`, whose state is the same on every replica and advances once
per training step. So one device with batch G and R replicas with batch G / R each draw exactly
the same noise for every example (on one kind of device: XLA and the CPU kernels lay the Philox
stream out differently), which makes distributed runs comparable to single-device runs number
for number, while every example still gets its own independent noise.
"""

import tensorflow as tf
import tf_keras

# Philox 4x32 emits four 32-bit words per counter increment; rows start on a word boundary.
_WORDS_PER_COUNTER = 4
_PHILOX = tf.random.Algorithm.PHILOX.value


@tf_keras.utils.register_keras_serializable(package='teams_tf')
class SeedStream(tf_keras.layers.Layer):
  """A stateless seed per call, identical on every replica, checkpointed with the model.

  The state is a mirrored int64 weight (base seed, calls so far) that every replica reads and
  that advances as one (`ONLY_FIRST_REPLICA`), unlike `tf.random.Generator`, whose streams
  differ per replica by design. A layer, so a model that never samples (serving) can drop it.
  """

  def __init__(self, seed=None, **kwargs):
    """Creates the stream.

    Args:
      seed: int base seed; None draws one from TensorFlow's global generator, so it follows
        `tf.random.set_seed` (and is random without it). A multi-worker strategy broadcasts the
        chief's initial value, so workers agree either way.
      **kwargs: Keras layer arguments (`name`, ...).
    """
    super().__init__(**kwargs)
    self._seed = seed
    base = (int(tf.random.uniform([], maxval=2**62, dtype=tf.int64)) if seed is None
            else int(seed))
    self.state = self.add_weight(
        name='seed_stream_state', shape=[2], dtype=tf.int64, trainable=False,
        initializer=tf_keras.initializers.Constant([base, 0]),
        synchronization=tf.VariableSynchronization.ON_WRITE,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def next(self, num=1):
    """[num, 2] int64 stateless seeds for this call; advances the stream."""
    seed = tf.identity(self.state)
    self.state.assign_add(tf.constant([0, 1], tf.int64))
    return tf.random.experimental.stateless_split(seed, num)

  def get_config(self):
    config = super().get_config()
    config.update(seed=self._seed)
    return config


def replica_row_offset(rows):
  """Index in the global batch of this replica's first row (replicas hold equal slices)."""
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return tf.constant(0, tf.int64)
  return tf.cast(context.replica_id_in_sync_group, tf.int64) * tf.cast(rows, tf.int64)


def uniform(shape, seed, row_offset=None):
  """Uniform [0, 1) float32 noise whose rows are rows of one draw over the global batch.

  Args:
    shape: int shape [B, ...] (a list or an int32 tensor); B is this replica's batch.
    seed: [2] int stateless seed, the same on every replica (`SeedStream.next`).
    row_offset: global index of this replica's first row; default from the replica context
      (replica id × B, how Model Garden's input pipelines split the global batch).

  Returns:
    float32 tensor of `shape`: row b is the same numbers whatever the number of replicas, as
    long as it is row `row_offset + b` of the global batch.
  """
  shape = tf.cast(shape, tf.int64)
  rows, row_size = shape[0], tf.reduce_prod(shape[1:])
  counters_per_row = (row_size + _WORDS_PER_COUNTER - 1) // _WORDS_PER_COUNTER
  offset = replica_row_offset(rows) if row_offset is None else tf.cast(row_offset, tf.int64)
  # Scramble the (possibly low-entropy) seed into a Philox key and counter high word; the low
  # word counts this replica's first row from 0.
  key_and_high = tf.random.stateless_uniform(
      [2], seed, minval=None, maxval=None, dtype=tf.int64)
  key = tf.bitcast(key_and_high[:1], tf.uint64)
  counter = tf.bitcast(tf.stack([offset * counters_per_row, key_and_high[1]]), tf.uint64)
  noise = tf.raw_ops.StatelessRandomUniformV2(
      shape=tf.stack([rows, counters_per_row * _WORDS_PER_COUNTER]), key=key, counter=counter,
      alg=_PHILOX, dtype=tf.float32)
  return tf.reshape(noise[:, :row_size], shape)
