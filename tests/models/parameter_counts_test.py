"""Parameter counts: kept encoder vs Model Garden's own count; compute-matched baselines."""

import json
import os
import subprocess
import sys

from absl.testing import parameterized
import tensorflow as tf

from official.nlp.configs import encoders

from teams_tf.models import coco_lm_pretrainer
from teams_tf.models import parameter_counts
from teams_tf.models import teams_pretrainer
from tests import testing_utils

_ROOT = os.path.join(os.path.dirname(__file__), '..', '..')


def _bert_v2_size(encoder_config):
  encoder = encoders.build_encoder(encoders.EncoderConfig(type='bert_v2', bert_v2=encoder_config))
  ids = tf.ones([1, 4], tf.int32)
  encoder(dict(input_word_ids=ids, input_mask=ids, input_type_ids=ids * 0))
  return encoder.count_params()


class ParameterCountsTest(tf.test.TestCase, parameterized.TestCase):

  @parameterized.named_parameters(
      ('teams', {}, 2), ('top_task_layers', dict(rtd_head_input_layer=2, mws_task_layer=True), 3))
  def test_kept_encoder_equals_model_garden_bert_v2(self, overrides, kept_layers):
    config = testing_utils.tiny_teams_config(**overrides)
    model = teams_pretrainer.build_teams_pretrainer(config)
    model(testing_utils.pretraining_batch())
    counts = parameter_counts.parameter_counts(model)
    self.assertEqual(_bert_v2_size(config.encoder.replace(num_layers=kept_layers)),
                     counts['kept_encoder'])

  def test_generator_counts_only_its_own_variables(self):
    # Tiny TEAMS: 2-layer generator sharing layer 1, so the generator owns layer 2, its
    # projection 16 -> 32 and the MLM head (dense 32 -> 16, LayerNorm, output bias).
    model = teams_pretrainer.build_teams_pretrainer(testing_utils.tiny_teams_config())
    model(testing_utils.pretraining_batch())
    hidden, embedding, inner, vocab = 32, 16, 64, testing_utils.VOCAB_SIZE
    layer = (4 * (hidden * hidden + hidden) + 2 * 2 * hidden + hidden * inner + inner +
             inner * hidden + hidden)
    projection = embedding * hidden + hidden
    mlm_head = hidden * embedding + embedding + 2 * embedding + vocab
    self.assertEqual(layer + projection + mlm_head,
                     parameter_counts.parameter_counts(model)['generator'])

  @parameterized.named_parameters(('relative_positions', True, 8 * 2),
                                  ('absolute_positions', False, 0))
  def test_coco_lm_keeps_bert_plus_its_position_bias_table(self, relative, bias_size):
    # COCO-LM's main Transformer is BERT's plus one [buckets, heads] bias table (8 x 2 here).
    config = testing_utils.tiny_coco_lm_config(relative_position_bias=relative)
    model = coco_lm_pretrainer.build_coco_lm_pretrainer(config)
    model(testing_utils.pretraining_batch())
    counts = parameter_counts.parameter_counts(model)
    self.assertEqual(_bert_v2_size(config.encoder) + bias_size, counts['kept_encoder'])

  def test_small_baselines_keep_the_same_14m_encoder(self):
    # TEAMS Table 1: BERT, ELECTRA and TEAMS small all keep a 14M encoder (BERT vocabulary).
    output = os.path.join(self.get_temp_dir(), 'counts')
    subprocess.run(
        [sys.executable, os.path.join(_ROOT, 'tools', 'count_parameters.py'),
         '--experiments=bert_small,electra_small,teams_small', f'--output={output}'],
        check=True, capture_output=True, timeout=600)
    with open(output + '.json') as f:
      results = json.load(f)
    self.assertEqual(30522, results['vocab_size'])
    counts = {row['experiment']: row for row in results['rows']}
    kept = {name: row['kept_encoder'] for name, row in counts.items()}
    self.assertLen(set(kept.values()), 1, kept)
    self.assertBetween(kept['teams_small'], 13.5e6, 14.5e6)
    self.assertEqual(0, counts['bert_small']['generator'])
    # ELECTRA's quarter-width generator is far smaller than TEAMS' half-depth full-width one.
    self.assertLess(counts['electra_small']['generator'], counts['teams_small']['generator'])
    with open(output + '.md') as f:
      self.assertIn('| teams_small | 13.55M |', f.read())

if __name__ == '__main__':
  tf.test.main()
