"""Recipes by size: the papers' settings, the low-budget ones, and lines written from them."""

import tensorflow as tf

from teams_tf.registry import recipes


class RecipesTest(tf.test.TestCase):

  def test_descriptions_are_written_from_the_recipe_fields(self):
    self.assertEqual('small, Table 5 (12 layers, H 256, E 128; lr 5e-4, batch 256, 500k steps)',
                     recipes.size_description('teams', 'small'))
    self.assertEqual('large, Table 5 (24 layers, H 1024; lr 2e-4, batch 2048, 1.76M steps)',
                     recipes.size_description('bert', 'large'))
    # TACO's own small model and optimisation, not Table 5's.
    self.assertEqual('small of its paper (4 layers, H 512; lr 1e-4, batch 1280, 250k steps, '
                     'T=256)', recipes.size_description('taco', 'small'))
    mini = recipes.LOW_BUDGET_RECIPES['mini']
    self.assertIn(f'{mini.mask_rate:.0%} masking, T {mini.seq_length}, batch {mini.batch_size}',
                  recipes.size_description('teams', 'mini'))
    self.assertIn('1,400 steps', recipes.size_description('teams', 'demo'))

  def test_paper_sizes_and_settings(self):
    self.assertEqual(('small', 'base', 'large'), recipes.paper_sizes('teams'))
    self.assertEqual(('small', 'base'), recipes.paper_sizes('script'))
    self.assertEqual(512, recipes.paper_settings('teams', 'base').seq_length)
    self.assertEqual(128, recipes.paper_settings('script', 'small').seq_length)
    self.assertEqual(('small', 'base', 'large', 'demo', 'mini'), recipes.SIZES)

  def test_low_budget_masks_every_masked_token_of_a_full_sequence(self):
    # 40% of the 62 text positions of T = 64; 15% of them at evaluation.
    self.assertEqual(25, recipes.max_predictions(0.4, 64))
    self.assertEqual(9, recipes.max_predictions(0.15, 64))
    encoder = recipes.low_budget_encoder_config('mini')
    self.assertEqual((True, 0.0, encoder.hidden_size, 64),
                     (encoder.norm_first, encoder.dropout_rate, encoder.embedding_size,
                      encoder.max_position_embeddings))


if __name__ == '__main__':
  tf.test.main()
