"""COCO-LM's main Transformer with its CLM head, served to fill [MASK] tokens (COCO-LM §5.3).

CLM keeps a language-model head on the encoder that is kept, so, unlike ELECTRA's, it can score
the vocabulary at a [MASK] for prompt-based fine-tuning (LM-BFF). The scores are p_LM of Eq. (2)
(`losses.clm.corrective_lm_log_probs`); at a [MASK] input the copy term only puts mass on
[MASK] itself, which is never proposed as a fill. Loading the SavedModel needs
`import tensorflow_text`, which registers the tokenizer ops.
"""

import dataclasses

import tensorflow as tf

from official.core import export_base
from official.nlp.modeling import layers

from teams_tf.data import tokenization
from teams_tf.losses import clm


@dataclasses.dataclass(frozen=True)
class FillMaskParams:
  """Serving settings.

  Attributes:
    vocab_file: the WordPiece vocabulary the model was pretrained with (or `sample:vocab`).
    lower_case: whether the vocabulary is uncased.
    seq_length: T; longer texts are truncated (a [MASK] beyond T is then not filled).
    top_k: proposals per [MASK].
  """
  vocab_file: str
  lower_case: bool
  seq_length: int
  top_k: int = 5


class FillMask(export_base.ExportModule):
  """Serves p_LM at [MASK] positions from raw text (`serve_text`) or token ids (`serve`)."""

  def __init__(self, pretrainer, params: FillMaskParams):
    """Wraps a COCO-LM pretrainer.

    Args:
      pretrainer: a `CocoLmPretrainer` whose CLM head has a language-model output.
      params: `FillMaskParams`.

    Raises:
      ValueError: a pretrainer without the LM output, top_k outside [1, V - 1], or T < 3.
    """
    vocab = tokenization.load_vocabulary(params.vocab_file)
    if not getattr(pretrainer.clm_head, '_with_lm', False):
      raise ValueError('This COCO-LM model has no language-model output (lm_loss_weight was 0, '
                       'e.g. Table 3 "RTD Only" / "SCL + RTD"); it cannot fill [MASK] tokens.')
    if not 1 <= params.top_k < vocab.size:
      raise ValueError(f'top_k={params.top_k} must be in [1, {vocab.size - 1}].')
    if params.seq_length < 3:
      raise ValueError(f'seq_length={params.seq_length} must be >= 3 ([CLS], a token, [SEP]).')
    super().__init__(params, pretrainer)
    self._vocab = vocab
    self._tokenizer = tokenization.build_tokenizer(vocab, params.lower_case)
    self._tokens = tf.constant(vocab.tokens)

  def _log_probs(self, input_word_ids, input_mask, input_type_ids, positions):
    """[B, P, V] float32 log p_LM at `positions` ([B, P] int32, any valid index)."""
    encoder = self.model.discriminator_network
    sequence = encoder([input_word_ids, input_mask, input_type_ids],
                       training=False)['sequence_output']
    head = self.model.clm_head(sequence, positions)
    return clm.corrective_lm_log_probs(
        head['clm_logits'], tf.gather(head['copy_logits'], positions, batch_dims=1),
        tf.gather(input_word_ids, positions, batch_dims=1))

  @tf.function
  def serve(self, input_word_ids, input_mask, input_type_ids, masked_lm_positions):
    """p_LM over the vocabulary at given positions; not differentiable (serving only).

    Args:
      input_word_ids, input_mask, input_type_ids: [B, T] int32 packed inputs.
      masked_lm_positions: [B, P] int32 positions to score.

    Returns:
      `log_probs`: [B, P, V] float32 log p_LM(·|h_i) (Eq. 2), summing to 1 over V.
    """
    return dict(log_probs=self._log_probs(input_word_ids, input_mask, input_type_ids,
                                          masked_lm_positions))

  @tf.function
  def serve_text(self, text):
    """Fills every literal `[MASK]` of each text.

    Args:
      text: [B] string, UTF-8 text with `[MASK]` where tokens are to be predicted.

    Returns:
      `input_word_ids` [B, T] int32 (the packed input), `mask_positions` [B, M] int32 (positions
      of the [MASK] tokens, -1 padding; M is the most [MASK]s of any text), `top_ids` [B, M, k]
      int32, `top_tokens` [B, M, k] string and `top_probabilities` [B, M, k] float32, the k most
      probable fills under p_LM, best first ([MASK] itself excluded; padding rows are 0/'').
    """
    pieces = tf.strings.split(text, tokenization.MASK_TOKEN)  # [B, (pieces)]
    piece_tokens = self._tokenizer.tokenize(pieces.flat_values).merge_dims(1, 2)
    piece_tokens = tf.RaggedTensor.from_row_splits(piece_tokens, pieces.row_splits)
    # A [MASK] after every piece, then drop the one after each text's last piece.
    masks = tf.RaggedTensor.from_row_splits(
        tf.fill([tf.shape(pieces.flat_values)[0], 1], self._vocab.mask_id), pieces.row_splits)
    tokens = tf.concat([piece_tokens, masks], axis=2).merge_dims(1, 2)[:, :-1]  # [B, (tokens)]
    packed = layers.BertPackInputs.bert_pack_inputs(
        [tokens], self.params.seq_length, start_of_sequence_id=self._vocab.cls_id,
        end_of_segment_id=self._vocab.sep_id, padding_id=self._vocab.pad_id)
    word_ids = packed['input_word_ids']
    is_mask = tf.equal(word_ids, self._vocab.mask_id)
    ranges = tf.broadcast_to(tf.range(tf.shape(word_ids)[1]), tf.shape(word_ids))
    positions = tf.ragged.boolean_mask(ranges, is_mask).to_tensor(default_value=-1)  # [B, M]
    valid = positions >= 0
    log_probs = self._log_probs(word_ids, packed['input_mask'], packed['input_type_ids'],
                                tf.maximum(positions, 0))
    # [MASK] is the input there, so the copy term gives it mass; it is never a fill.
    not_mask = tf.not_equal(tf.range(self._vocab.size), self._vocab.mask_id)
    log_probs = tf.where(not_mask, log_probs, -float('inf'))
    top = tf.math.top_k(log_probs, k=self.params.top_k)
    top_ids = tf.where(valid[..., None], top.indices, 0)
    return dict(
        input_word_ids=word_ids,
        mask_positions=positions,
        top_ids=top_ids,
        top_tokens=tf.where(valid[..., None], tf.gather(self._tokens, top_ids), ''),
        top_probabilities=tf.where(valid[..., None], tf.exp(top.values), 0.0))

  def get_inference_signatures(self, function_keys):
    """Concrete functions for `serve` (token ids) and `serve_text` (raw text)."""
    ids = tf.TensorSpec([None, None], tf.int32)
    signatures = {}
    for name, key in function_keys.items():
      if name == 'serve':
        signatures[key] = self.serve.get_concrete_function(
            ids, ids, ids, tf.TensorSpec([None, None], tf.int32))
      elif name == 'serve_text':
        signatures[key] = self.serve_text.get_concrete_function(
            tf.TensorSpec([None], tf.string))
      else:
        raise ValueError(f'Unknown function key {name!r}; use serve or serve_text.')
    return signatures
