"""Linear probes of frozen encoders (`tools/probe_encoders.py`)."""

import os

import numpy as np
import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf.benchmarking import probing
from tests import testing_utils

_T = 8


def _write_records(path, input_ids, labels):
  """Model Garden classifier records, as tools/create_glue_data.py writes them."""
  with tf.io.TFRecordWriter(path) as writer:
    for ids, label in zip(input_ids, labels):
      values = dict(input_ids=ids, input_mask=[1] * _T, segment_ids=[0] * _T, label_ids=[label])
      feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=value))
                 for name, value in values.items()}
      example = tf.train.Example(features=tf.train.Features(feature=feature))
      writer.write(example.SerializeToString())


def _token_presence(rng, n):
  """Sequences of tokens 10-19; the label says whether token 7 replaced one of them."""
  input_ids = rng.integers(10, 20, size=(n, _T))
  labels = rng.integers(0, 2, size=n)
  input_ids[labels == 1, rng.integers(1, _T)] = 7
  return input_ids.tolist(), labels.tolist()


class ProbingTest(tf.test.TestCase):

  def test_probes_find_a_token_in_the_embeddings_and_every_layer(self):
    rng = np.random.default_rng(0)
    paths, labels = {}, {}
    for split, n in (('train', 400), ('dev', 200)):
      paths[split] = os.path.join(self.get_temp_dir(), f'{split}.tfrecord')
      input_ids, labels[split] = _token_presence(rng, n)
      _write_records(paths[split], input_ids, labels[split])
    tf.keras.utils.set_random_seed(0)
    encoder = encoders.build_encoder(
        encoders.EncoderConfig(type='bert', bert=testing_utils.tiny_encoder_config()))
    accuracies = probing.probe(encoder, probing.glue_records(paths['train'], _T, 64),
                               probing.glue_records(paths['dev'], _T, 64))
    self.assertLen(accuracies, 3)  # The word embeddings and 2 layers.
    # Every example, in order, also from the last partial batch (200 = 3 x 64 + 8).
    _, dev_labels = probing.layer_features(encoder, probing.glue_records(paths['dev'], _T, 64))
    self.assertEqual(labels['dev'], dev_labels.tolist())
    for accuracy in accuracies:
      self.assertGreater(accuracy, 0.9)
    table = probing.markdown({'tiny': accuracies}, 'sst2', 'mean', '/data/sst2')
    self.assertStartsWith(table, '# Linear probes on sst2\n')
    self.assertIn('| encoder | embeddings | layer 1 | layer 2 |', table)
    self.assertIn(f'| tiny | {100 * accuracies[0]:.1f} |', table)
    # [CLS] pooling reads each layer at position 0 only; the embeddings stay averaged.
    dev = probing.glue_records(paths['dev'], _T, 64)
    mean_layers, _ = probing.layer_features(encoder, dev)
    cls_layers, _ = probing.layer_features(encoder, dev, 'cls')
    batch = next(iter(dev))
    inputs = ('input_word_ids', 'input_mask', 'input_type_ids')
    first = encoder({key: batch[key] for key in inputs})['encoder_outputs']
    self.assertAllClose(mean_layers[0], cls_layers[0])
    for layer, states in enumerate(first, start=1):
      self.assertAllClose(states[:, 0], cls_layers[layer][:64], atol=1e-5)
    with self.assertRaisesRegex(ValueError, "pooling='max' must be one of"):
      probing.probe(encoder, dev, dev, 'max')

  def test_probe_of_features_unrelated_to_the_labels_is_near_chance(self):
    rng = np.random.default_rng(1)
    features, labels = rng.normal(size=(2000, 8)), rng.integers(0, 2, size=2000)
    self.assertAlmostEqual(
        0.5, probing.probe_accuracy(features[:1000], labels[:1000], features[1000:],
                                    labels[1000:]), delta=0.06)

  def test_missing_records_name_the_tool_that_writes_them(self):
    with self.assertRaisesRegex(ValueError, 'nothere.tfrecord does not exist: convert the task '
                                'with tools/create_glue_data.py'):
      probing.glue_records(os.path.join(self.get_temp_dir(), 'nothere.tfrecord'), _T)


if __name__ == '__main__':
  tf.test.main()
