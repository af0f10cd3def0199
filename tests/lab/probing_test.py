"""Linear probes of frozen encoders (`tools/probe_encoders.py`)."""

import functools
import json
import os

import numpy as np
from scipy import stats
import tensorflow as tf
import tf_keras

from official.nlp.configs import encoders

from teams_lab import probing
from teams_tf.models import pooled_classifier
from tests import testing_utils

_T = 9


def _write_records(path, input_ids, labels, segment_ids=None):
  """Model Garden classifier records, as tools/create_glue_data.py writes them.

  Float labels are written as STS-B's scores are; `segment_ids` defaults to one sentence.
  """
  with tf.io.TFRecordWriter(path) as writer:
    for i, (ids, label) in enumerate(zip(input_ids, labels)):
      segments = [0] * _T if segment_ids is None else segment_ids[i]
      feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=value))
                 for name, value in (('input_ids', ids), ('input_mask', [1] * _T),
                                     ('segment_ids', segments))}
      feature['label_ids'] = (
          tf.train.Feature(float_list=tf.train.FloatList(value=[label]))
          if isinstance(label, float) else
          tf.train.Feature(int64_list=tf.train.Int64List(value=[label])))
      example = tf.train.Example(features=tf.train.Features(feature=feature))
      writer.write(example.SerializeToString())


def _token_presence(rng, n):
  """Sequences of tokens 10-19; the label says whether token 7 replaced one of them."""
  input_ids = rng.integers(10, 20, size=(n, _T))
  labels = rng.integers(0, 2, size=n)
  input_ids[labels == 1, rng.integers(1, _T)] = 7
  return input_ids.tolist(), labels.tolist()


def _paraphrases(rng, n):
  """Sentence pairs [CLS] a [SEP] b [SEP], b a copy of a with 0-3 of its 3 words replaced.

  The score, 3 minus the number replaced, is a similarity that only a comparison of the two
  sentences recovers: each sentence alone is uniformly random.
  """
  words = rng.integers(10, 40, size=(n, 3))
  replaced = rng.integers(0, 4, size=n)
  copies = words.copy()
  for i, k in enumerate(replaced):
    # Drawn like a's words, so that a pair's bag of words does not tell how many were replaced.
    copies[i, :k] = rng.integers(10, 40, size=k)
  cls, sep = 2, 3
  input_ids = [[cls, *a, sep, *b, sep] for a, b in zip(words.tolist(), copies.tolist())]
  segment_ids = [[0] * 5 + [1] * 4] * n
  return input_ids, [float(3 - k) for k in replaced], segment_ids


def _tiny_encoder():
  tf_keras.utils.set_random_seed(0)
  return encoders.build_encoder(
      encoders.EncoderConfig(type='bert', bert=testing_utils.tiny_encoder_config()))


class ProbingTest(tf.test.TestCase):

  def test_probes_find_a_token_in_the_embeddings_and_every_layer(self):
    rng = np.random.default_rng(0)
    paths, labels = {}, {}
    for split, n in (('train', 400), ('dev', 200)):
      paths[split] = os.path.join(self.get_temp_dir(), f'{split}.tfrecord')
      input_ids, labels[split] = _token_presence(rng, n)
      _write_records(paths[split], input_ids, labels[split])
    encoder = _tiny_encoder()
    accuracies = probing.probe(encoder, probing.glue_records(paths['train'], _T, 64),
                               probing.glue_records(paths['dev'], _T, 64))
    self.assertLen(accuracies, 3)  # The word embeddings and 2 layers.
    # Every example, in order, also from the last partial batch (200 = 3 x 64 + 8).
    _, dev_labels = probing.layer_features(encoder, probing.glue_records(paths['dev'], _T, 64))
    self.assertEqual(labels['dev'], dev_labels.tolist())
    for accuracy in accuracies:
      self.assertGreater(accuracy, 0.9)
    table = probing.markdown({'tiny': accuracies}, 'sst2', 'mean', '/data/sst2',
                             'python tools/probe_encoders.py --task=sst2')
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

  def test_pair_pooling_compares_the_two_sentences_of_a_pair(self):
    self.assertEqual(_T, 9)  # [CLS] + 3 words + [SEP], 3 words + [SEP].
    rng = np.random.default_rng(2)
    paths = {}
    for split, n in (('train', 600), ('dev', 300)):
      paths[split] = os.path.join(self.get_temp_dir(), f'{split}.tfrecord')
      _write_records(paths[split], *_paraphrases(rng, n))
    encoder = _tiny_encoder()

    def records(split):
      return probing.glue_records(paths[split], _T, 64, label_type='float')

    # The embeddings row: each sentence's mean word embedding, then [|u - v|, u * v].
    layers, scores = probing.layer_features(encoder, records('dev'), 'pair')
    table = encoder.get_embedding_table().numpy()
    first = next(iter(records('dev')))['input_word_ids'].numpy()
    u, v = table[first[:, :5]].mean(axis=1), table[first[:, 5:]].mean(axis=1)
    self.assertAllClose(np.concatenate([np.abs(u - v), u * v], axis=-1), layers[0][:64],
                        atol=1e-5)
    self.assertLen(layers, 3)
    self.assertEqual(layers[1].shape, (300, 2 * 32))
    self.assertDTypeEqual(scores, np.float32)
    # The comparison finds the similarity in the word embeddings; one mean of both cannot.
    pair = probing.probe(encoder, records('train'), records('dev'), 'pair', regression=True)
    mean = probing.probe(encoder, records('train'), records('dev'), 'mean', regression=True)
    self.assertGreater(pair[0], 0.8)
    self.assertLess(mean[0], 0.3)
    with self.assertRaisesRegex(ValueError, "pooling='pair' needs sentence pairs"):
      probing.layer_features(encoder, probing.glue_records(self._single_sentences(), _T), 'pair')
    markdown = probing.markdown({'tiny': pair}, 'stsb', 'pair', '/data/stsb',
                                'python tools/probe_encoders.py --task=stsb --pooling=pair')
    self.assertStartsWith(markdown, '# Linear probes on stsb (sentence pairs)\n\n'
                          '`python tools/probe_encoders.py --task=stsb --pooling=pair`: dev '
                          'Spearman correlation x 100 of a ridge regression')
    self.assertEqual(probing.result_name('stsb', 'pair'), 'probes_stsb_pair')
    self.assertEqual(probing.result_name('sst2', 'mean'), 'probes_sst2')

  def _single_sentences(self):
    path = os.path.join(self.get_temp_dir(), 'single.tfrecord')
    _write_records(path, *_token_presence(np.random.default_rng(3), 10))
    return path

  def test_probe_of_features_unrelated_to_the_labels_is_near_chance(self):
    rng = np.random.default_rng(1)
    features, labels = rng.normal(size=(2000, 8)), rng.integers(0, 2, size=2000)
    self.assertAlmostEqual(
        0.5, probing.probe_score(features[:1000], labels[:1000], features[1000:],
                                 labels[1000:]), delta=0.06)
    scores = rng.normal(size=2000)
    self.assertAlmostEqual(
        0.0, probing.probe_score(features[:1000], scores[:1000], features[1000:],
                                 scores[1000:], regression=True), delta=0.1)

  def test_matthews_probe_scores_cola_as_glue_does(self):
    rng = np.random.default_rng(2)
    # 70% of the examples acceptable, as in CoLA: unrelated features get the majority's accuracy
    # but no correlation; features that are the label get both.
    labels = (rng.random(2000) < 0.7).astype(int)
    noise = rng.normal(size=(2000, 3))
    for features, accuracy, matthews in ((noise, 0.7, 0.0), (np.c_[labels, noise], 1.0, 1.0)):
      score = functools.partial(probing.probe_score, features[:1000], labels[:1000],
                                features[1000:], labels[1000:])
      self.assertAlmostEqual(accuracy, score(), delta=0.05)
      self.assertAlmostEqual(matthews, score(matthews=True), delta=0.05)

  def test_regression_probe_is_the_spearman_correlation_of_a_ridge_fit(self):
    rng = np.random.default_rng(4)
    features = rng.normal(size=(1000, 4))
    scores = features @ np.array([1.0, -2.0, 0.0, 0.5]) + 0.1 * rng.normal(size=1000)
    train, dev = slice(0, 600), slice(600, None)
    value = probing.probe_score(features[train], scores[train], features[dev], scores[dev],
                                regression=True)
    # Least squares from NumPy, ranked by NumPy: the ridge penalty chosen cannot change the order
    # much on so clean a fit.
    mean, std = features[train].mean(0), features[train].std(0)
    design = np.c_[(features[train] - mean) / std, np.ones(600)]
    weights = np.linalg.lstsq(design, scores[train], rcond=None)[0]
    predictions = np.c_[(features[dev] - mean) / std, np.ones(400)] @ weights
    ranks = [np.argsort(np.argsort(x)) for x in (predictions, scores[dev])]
    self.assertAlmostEqual(np.corrcoef(*ranks)[0, 1], value, places=3)
    # Features that say nothing give constant predictions: no correlation, scored 0.
    self.assertEqual(0.0, probing.probe_score(np.ones((600, 2)), scores[train],
                                              np.ones((400, 2)), scores[dev], regression=True))

  def test_untrained_cosines_match_numpy_and_see_paraphrases(self):
    rng = np.random.default_rng(3)
    path = os.path.join(self.get_temp_dir(), 'dev.tfrecord')
    input_ids, scores, segments = _paraphrases(rng, 300)
    _write_records(path, input_ids, scores, segments)
    dev = probing.glue_records(path, _T, 64, label_type='float')
    encoder = _tiny_encoder()
    correlations, unrelated = probing.cosine_scores(encoder, dev)
    self.assertLen(correlations, 3)
    self.assertLen(unrelated, 3)
    # The embeddings row by hand: each sentence's mean word embedding, [CLS] and [SEP]s included.
    table = encoder.get_embedding_table().numpy().astype(np.float64)
    ids = np.array(input_ids)
    u, v = table[ids[:, :5]].mean(axis=1), table[ids[:, 5:]].mean(axis=1)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ranks = [stats.rankdata(values) for values in (np.sum(u * v, axis=1), scores)]
    self.assertAllClose(np.corrcoef(*ranks)[0, 1], correlations[0], atol=1e-4)
    self.assertAllClose(np.mean(np.sum(u * np.roll(v, 1, axis=0), axis=1)), unrelated[0],
                        atol=1e-4)
    # Shared words make a pair's embeddings alike: the cosine ranks the scores untrained.
    self.assertGreater(correlations[0], 0.6)
    # The last layer's row is where the siamese head starts fine-tuning.
    head = pooled_classifier.PooledClassifier(encoder, 1, 'siamese_cosine')
    predictions = np.concatenate([head({key: batch[key] for key in
                                        ('input_word_ids', 'input_mask', 'input_type_ids')},
                                       training=False)[:, 0] for batch in dev])
    self.assertAllClose(stats.spearmanr(predictions, scores)[0], correlations[-1], atol=1e-4)
    with self.assertRaisesRegex(ValueError, "pooling='cosine' trains no probe"):
      probing.probe(encoder, dev, dev, 'cosine')
    markdown = probing.markdown({'tiny': correlations}, 'stsb', 'cosine', '/data/stsb',
                                'python tools/probe_encoders.py --task=stsb --pooling=cosine',
                                unrelated={'tiny': unrelated})
    self.assertStartsWith(markdown, '# Untrained cosine similarity on stsb (sentence pairs)\n')
    self.assertIn('| tiny | ' + ' | '.join(f'{100 * value:.1f}' for value in unrelated) + ' |',
                  markdown)
    self.assertEqual('probes_stsb_cosine', probing.result_name('stsb', 'cosine'))

  def test_probing_some_encoders_keeps_the_report_rows_of_the_others(self):
    out_dir = self.get_temp_dir()
    order = ['BERT', 'ELECTRA', 'TEAMS', 'random init']
    # No report yet: the new rows alone, in the report's order.
    self.assertEqual({'BERT': [0.5], 'random init': [0.4]}, probing.merge_scores(
        out_dir, 'sst2', 'cls', {'random init': [0.4], 'BERT': [0.5]}, order))
    with open(os.path.join(out_dir, 'probes_sst2_cls.json'), 'w') as f:
      json.dump({'scores': {'BERT': [0.5], 'ELECTRA': [0.6], 'random init': [0.4]},
                 'unrelated_cosine': {'BERT': [0.9]}, 'pooling': 'cls'}, f)
    merged = probing.merge_scores(out_dir, 'sst2', 'cls', {'TEAMS': [0.7], 'ELECTRA': [0.65],
                                                            'new': [0.1]}, order)
    # A re-probed encoder's row is replaced, an unlisted one goes last.
    self.assertEqual([('BERT', [0.5]), ('ELECTRA', [0.65]), ('TEAMS', [0.7]),
                      ('random init', [0.4]), ('new', [0.1])], list(merged.items()))
    # Another pooling's report is another file.
    self.assertEqual({'TEAMS': [0.7]}, probing.merge_scores(out_dir, 'sst2', 'mean',
                                                           {'TEAMS': [0.7]}, order))
    # A report's second table (the cosine report's unrelated pairs) merges from its own key.
    self.assertEqual({'BERT': [0.9], 'TEAMS': [0.7]}, probing.merge_scores(
        out_dir, 'sst2', 'cls', {'TEAMS': [0.7]}, order, key='unrelated_cosine'))

  def test_missing_records_name_the_tool_that_writes_them(self):
    with self.assertRaisesRegex(ValueError, 'nothere.tfrecord does not exist: convert the task '
                                'with tools/create_glue_data.py'):
      probing.glue_records(os.path.join(self.get_temp_dir(), 'nothere.tfrecord'), _T)


if __name__ == '__main__':
  tf.test.main()
