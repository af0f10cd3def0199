"""Kept encoder -> Hugging Face ELECTRA checkpoint (`transformers.ElectraModel`).

Every objective here but COCO-LM with relative positions (refused: ELECTRA has no such bias)
keeps a Model Garden `BertEncoderV2`-layout encoder (post-LN BERT blocks, optionally a factorised
embedding with a projection to the hidden width). That is exactly
ELECTRA's architecture in `transformers` (`embedding_size` != `hidden_size` gives its
`embeddings_project`), so one mapping serves TEAMS, ELECTRA and BERT encoders. Model Garden's
GELU is the tanh approximation, which `transformers` calls `gelu_new`. The [CLS] pooler is not
exported: ELECTRA has none, and no pretraining objective here trains it.
"""

import os
import shutil
import tempfile

import numpy as np

from teams_tf.configs import encoders as encoder_configs

_PREFIX = 'transformer/layer_'


def _named_weights(encoder):
  """Encoder variables by name without the model-name prefix, as NumPy float32 arrays."""
  return {v.name.split('/', 1)[1].rsplit(':', 1)[0]: v.numpy().astype(np.float32)
          for v in encoder.variables}


def electra_state_dict(encoder, encoder_config):
  """Maps a built `BertEncoderV2` to an `ElectraModel` state dict of NumPy arrays.

  Args:
    encoder: a built Model Garden BertEncoderV2 (e.g. restored from a pretraining checkpoint).
    encoder_config: its `BertEncoderConfig`.

  Returns:
    Dict from ElectraModel parameter names to float32 arrays.
  """
  w = _named_weights(encoder)
  hidden = encoder_config.hidden_size
  state = {
      'embeddings.word_embeddings.weight': w['word_embeddings/embeddings'],
      'embeddings.position_embeddings.weight': w['position_embedding/embeddings'],
      'embeddings.token_type_embeddings.weight': w['type_embeddings/embeddings'],
      'embeddings.LayerNorm.weight': w['embeddings/layer_norm/gamma'],
      'embeddings.LayerNorm.bias': w['embeddings/layer_norm/beta'],
  }
  if 'embedding_projection/kernel' in w:
    state['embeddings_project.weight'] = w['embedding_projection/kernel'].T
    state['embeddings_project.bias'] = w['embedding_projection/bias']
  for i in range(encoder_config.num_layers):
    src, dst = f'{_PREFIX}{i}/', f'encoder.layer.{i}.'
    for name in ('query', 'key', 'value'):
      # [H, heads, head_dim] -> [H, H] (in, out) -> torch [out, in].
      state[f'{dst}attention.self.{name}.weight'] = (
          w[f'{src}self_attention/{name}/kernel'].reshape(hidden, hidden).T)
      state[f'{dst}attention.self.{name}.bias'] = (
          w[f'{src}self_attention/{name}/bias'].reshape(hidden))
    # [heads, head_dim, H] -> [H, H] (in, out) -> torch [out, in].
    state[f'{dst}attention.output.dense.weight'] = (
        w[f'{src}self_attention/attention_output/kernel'].reshape(hidden, hidden).T)
    state[f'{dst}attention.output.dense.bias'] = w[f'{src}self_attention/attention_output/bias']
    state[f'{dst}attention.output.LayerNorm.weight'] = w[f'{src}self_attention_layer_norm/gamma']
    state[f'{dst}attention.output.LayerNorm.bias'] = w[f'{src}self_attention_layer_norm/beta']
    state[f'{dst}intermediate.dense.weight'] = w[f'{src}intermediate/kernel'].T
    state[f'{dst}intermediate.dense.bias'] = w[f'{src}intermediate/bias']
    state[f'{dst}output.dense.weight'] = w[f'{src}output/kernel'].T
    state[f'{dst}output.dense.bias'] = w[f'{src}output/bias']
    state[f'{dst}output.LayerNorm.weight'] = w[f'{src}output_layer_norm/gamma']
    state[f'{dst}output.LayerNorm.bias'] = w[f'{src}output_layer_norm/beta']
  return state


def _check_convertible(encoder_config):
  """Raises ValueError naming every part of the encoder that ElectraModel cannot hold."""
  relative_positions = (
      isinstance(encoder_config, encoder_configs.RelativePositionEncoderConfig)
      and encoder_config.relative_position_num_buckets > 0)
  unsupported = [what for what, present in (
      ('pre-LN blocks (norm_first=True)', encoder_config.norm_first),
      ('a T5 relative position bias', relative_positions)) if present]
  if unsupported:
    # The low-budget recipes (`*_demo`, `*_mini`) have both; a paper-size COCO-LM run has the bias.
    raise ValueError(
        f'This run\'s kept encoder has {" and ".join(unsupported)}, which transformers\' '
        'ElectraModel (post-LN, absolute positions) cannot hold: converting would change its '
        'outputs. Export it with tools/export_savedmodel.py --kind=encoder instead, or pretrain '
        'a convertible run with --params_override=task.model.encoder.norm_first=false,'
        'task.model.relative_position_bias=false (docs/serving.md).')
  if encoder_config.hidden_activation != 'gelu':
    raise ValueError(f'hidden_activation={encoder_config.hidden_activation!r}: only gelu '
                     "(Model Garden's tanh approximation, transformers' gelu_new) is supported.")


def export_to_hf(encoder, encoder_config, vocab_file, lower_case, pad_id, output_dir):
  """Writes `config.json`, the weights, `vocab.txt` and tokenizer files for `from_pretrained`.

  Args:
    encoder: a built BertEncoderV2 holding the weights to export.
    encoder_config: its `BertEncoderConfig`.
    vocab_file: the WordPiece vocabulary the encoder was trained with.
    lower_case: whether that vocabulary is uncased.
    pad_id: id of [PAD] in the vocabulary.
    output_dir: directory to write; created if missing.

  Raises:
    ValueError: an encoder the ELECTRA architecture cannot express (pre-LN blocks, a
      non-GELU activation, a relative position bias).
  """
  # Imported here: torch/transformers are an optional extra (`pip install .[hf]`).
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  _check_convertible(encoder_config)
  config = transformers.ElectraConfig(
      vocab_size=encoder_config.vocab_size,
      embedding_size=encoder_config.embedding_size or encoder_config.hidden_size,
      hidden_size=encoder_config.hidden_size,
      num_hidden_layers=encoder_config.num_layers,
      num_attention_heads=encoder_config.num_attention_heads,
      intermediate_size=encoder_config.intermediate_size,
      hidden_act='gelu_new',
      hidden_dropout_prob=encoder_config.dropout_rate,
      attention_probs_dropout_prob=encoder_config.attention_dropout_rate,
      max_position_embeddings=encoder_config.max_position_embeddings,
      type_vocab_size=encoder_config.type_vocab_size,
      initializer_range=encoder_config.initializer_range,
      layer_norm_eps=1e-12,  # Model Garden's LayerNorm epsilon everywhere in BertEncoderV2.
      pad_token_id=pad_id)
  model = transformers.ElectraModel(config)
  state = {k: torch.from_numpy(v) for k, v in electra_state_dict(encoder, encoder_config).items()}
  missing, unexpected = model.load_state_dict(state, strict=False)
  # position_ids / token_type_ids are non-persistent buffers, not weights.
  missing = [name for name in missing if not name.endswith(('position_ids', 'token_type_ids'))]
  if missing or unexpected:
    raise RuntimeError(f'Weight mapping mismatch: missing {missing}, unexpected {unexpected}.')
  os.makedirs(output_dir, exist_ok=True)
  model.save_pretrained(output_dir)
  # Loaded from a directory holding the vocabulary alone, not built from arguments: the keyword
  # naming the vocabulary file changed between transformers 4 (`vocab_file`) and 5 (`vocab`), and
  # a keyword the installed version does not know is swallowed, which leaves a tokenizer of the 5
  # special tokens (every word [UNK]).
  with tempfile.TemporaryDirectory() as vocab_dir:
    shutil.copyfile(vocab_file, os.path.join(vocab_dir, 'vocab.txt'))
    tokenizer = transformers.ElectraTokenizerFast.from_pretrained(
        vocab_dir, do_lower_case=lower_case,
        model_max_length=encoder_config.max_position_embeddings)
  if len(tokenizer) != encoder_config.vocab_size:
    raise RuntimeError(f'The Hugging Face tokenizer read {len(tokenizer)} tokens from '
                       f'{vocab_file}; the encoder has {encoder_config.vocab_size}.')
  tokenizer.save_pretrained(output_dir)
