"""Raw-text serving for Model Garden's fine-tuned sentence classifier and span labeler.

Model Garden's `SentencePrediction` and `QuestionAnswering` export modules
(`official/nlp/serving/serving_modules.py`) serve token ids or serialized tf.Examples. The
subclasses here add `serve_text`, which takes raw UTF-8 strings, tokenizes them inside the graph
with tensorflow-text and this project's WordPiece vocabulary, and decodes the logits into labels
and probabilities (or a regression score), or into an answer span of the context. Loading the
SavedModels needs `import tensorflow_text`, which registers the tokenizer ops.
"""

from typing import Sequence

import tensorflow as tf
import tensorflow_text as tf_text
import tf_keras

from official.nlp.modeling import layers
from official.nlp.serving import serving_modules

from teams_tf.data import tokenization


def _check_seq_length(seq_length, minimum):
  if seq_length < minimum:
    raise ValueError(f'seq_length={seq_length} must be at least {minimum}: the packed input holds '
                     '[CLS], one [SEP] per segment and at least one token of each segment.')


class TextClassifier(serving_modules.SentencePrediction):
  """Model Garden's `SentencePrediction` module plus a raw-text `serve_text` function.

  Text is packed as `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` by Model Garden's `TextProcessor`
  (tensorflow-text `BertTokenizer`, then round-robin truncation to T tokens), the preprocessing of
  Model Garden's raw-text sentence-prediction data loader. Longer texts are truncated to T.
  """

  def __init__(self, model: tf_keras.Model, *, num_classes: int, text_fields: Sequence[str],
               vocab_file: str, lower_case: bool, seq_length: int):
    """Wraps a fine-tuned classifier.

    Args:
      model: Model Garden `BertClassifier` mapping the dict of packed int32 [B, T] inputs to
        [B, C] logits.
      num_classes: C, the classifier's output width; 1 means regression.
      text_fields: one name per text segment (one or two); they name the inputs of `serve_text`.
      vocab_file: the WordPiece vocabulary the encoder was pretrained with (or `sample:vocab`).
      lower_case: whether the vocabulary is uncased (lowercase, strip accents before WordPiece).
      seq_length: T, the packed length; at most the encoder's `max_position_embeddings`.

    Raises:
      ValueError: no or more than two text fields, repeated field names, num_classes < 1,
        seq_length too short, or a vocabulary without the special tokens.
    """
    text_fields = list(text_fields)
    if not 1 <= len(text_fields) <= 2 or len(set(text_fields)) != len(text_fields):
      raise ValueError(f'text_fields={text_fields} must name one or two distinct text segments, '
                       'e.g. [sentence] or [premise, hypothesis].')
    if num_classes < 1:
      raise ValueError(f'num_classes={num_classes} must be >= 1 (1 = regression); is this a '
                       'fine-tuned sentence-prediction model?')
    _check_seq_length(seq_length, 1 + 2 * len(text_fields))
    vocab = tokenization.load_vocabulary(vocab_file)
    # Packed text always has type ids and a mask, so the token-id signature takes all three.
    params = serving_modules.SentencePrediction.Params(
        inputs_only=False, parse_sequence_length=seq_length, text_fields=text_fields,
        vocab_file=vocab.path, lower_case=lower_case)
    super().__init__(params, model)
    self._num_classes = num_classes

  @tf.function
  def serve_text(self, texts):
    """Classifies raw text; not differentiable (serving only).

    Args:
      texts: dict from each name in `text_fields` to a [B] string tensor of UTF-8 text; empty
        strings are allowed.

    Returns:
      For C > 1: `label` [B] int32 (argmax), `probabilities` [B, C] float32 (softmax) and
      `logits` [B, C] float32. For regression (C = 1): `score` [B] float32.
    """
    model_inputs = self._text_processor([texts[name] for name in self.params.text_fields])
    logits = tf.cast(self.serve(**model_inputs)['outputs'], tf.float32)
    if self._num_classes == 1:
      return dict(score=logits[:, 0])
    return dict(label=tf.argmax(logits, axis=-1, output_type=tf.int32),
                probabilities=tf.nn.softmax(logits), logits=logits)

  def get_inference_signatures(self, function_keys):
    """Model Garden's signatures plus `serve_text` (one [B] string input per text field)."""
    function_keys = dict(function_keys)
    signatures = {}
    if 'serve_text' in function_keys:
      signatures[function_keys.pop('serve_text')] = self.serve_text.get_concrete_function({
          name: tf.TensorSpec([None], tf.string, name=name) for name in self.params.text_fields})
    signatures.update(super().get_inference_signatures(function_keys))
    return signatures


class TextQuestionAnswering(serving_modules.QuestionAnswering):
  """Model Garden's `QuestionAnswering` module plus a raw-text `serve_text` function.

  The input is packed as `[CLS] question [SEP] context [SEP]` (type ids 0 then 1), as in Model
  Garden's SQuAD preprocessing: the question is cut to `max_query_length` tokens and the context
  fills the rest of the T tokens. There is no sliding window: a context longer than that is
  truncated, and answers beyond the cut are never found. Tokenization is tensorflow-text's
  `FastBertTokenizer`, which yields the same ids as the `BertTokenizer` used in training and byte
  offsets into the *original* text, so answers keep the context's case and accents.
  """

  def __init__(self, model: tf_keras.Model, *, vocab_file: str, lower_case: bool, seq_length: int,
               max_query_length: int, max_answer_length: int,
               version_2_with_negative: bool = False, null_score_diff_threshold: float = 0.0):
    """Wraps a fine-tuned span labeler.

    Args:
      model: Model Garden `BertSpanLabeler` mapping the dict of packed int32 [B, T] inputs to
        [start_logits, end_logits], each [B, T].
      vocab_file: the WordPiece vocabulary the encoder was pretrained with (or `sample:vocab`).
      lower_case: whether the vocabulary is uncased (lowercase, strip accents before WordPiece).
      seq_length: T, the packed length; at most the encoder's `max_position_embeddings`.
      max_query_length: most question tokens kept, in [1, T - 4].
      max_answer_length: most tokens in an answer span, >= 1.
      version_2_with_negative: SQuAD 2.0: answer nothing when the [CLS] ("no answer") score beats
        the best span by more than `null_score_diff_threshold`, as Model Garden's SQuAD
        postprocessing does.
      null_score_diff_threshold: see `version_2_with_negative`.

    Raises:
      ValueError: a length out of range, or a vocabulary without the special tokens.
    """
    _check_seq_length(seq_length, 5)
    if not 1 <= max_query_length <= seq_length - 4:
      raise ValueError(f'max_query_length={max_query_length} must be in [1, seq_length - 4 = '
                       f'{seq_length - 4}] so that at least one context token fits.')
    if max_answer_length < 1:
      raise ValueError(f'max_answer_length={max_answer_length} must be >= 1.')
    super().__init__(
        serving_modules.QuestionAnswering.Params(parse_sequence_length=seq_length), model)
    vocab = tokenization.load_vocabulary(vocab_file)
    self._tokenizer = tf_text.FastBertTokenizer(
        vocab=list(vocab.tokens), token_out_type=tf.int32, unknown_token=tokenization.UNK_TOKEN,
        lower_case_nfd_strip_accents=lower_case)
    self._special_ids = dict(start_of_sequence_id=vocab.cls_id, end_of_segment_id=vocab.sep_id,
                             padding_id=vocab.pad_id)
    self._max_query_length = max_query_length
    self._max_answer_length = max_answer_length
    self._version_2_with_negative = version_2_with_negative
    self._null_score_diff_threshold = null_score_diff_threshold

  @tf.function
  def serve_text(self, question, context):
    """Best answer span of each context for its question; serving only, not differentiable.

    A span starts and ends on context tokens, ends at or after its start and has at most
    `max_answer_length` tokens; the best one maximizes start_logit + end_logit.

    Args:
      question: [B] string, UTF-8.
      context: [B] string, UTF-8; only its first T - 3 - (question tokens) tokens are read.

    Returns:
      Dict of
        answer_text: [B] string, the span's bytes of `context` ('' for no answer).
        answer_start, answer_end: [B] int32 Unicode character offsets into `context`, end
          exclusive (Python: `context[answer_start:answer_end] == answer_text`); 0, 0 for none.
        start_position, end_position: [B] int32 positions of the span's first and last token in
          the packed input; 0 ([CLS]) for no answer.
        score: [B] float32 start_logit + end_logit of the best span; -inf if the context has no
          tokens (then there is no answer).
        start_logits, end_logits: [B, T] float32 logits over the packed input.
    """
    seq_length = self.params.parse_sequence_length
    question_ids = self._tokenizer.tokenize(question)[:, :self._max_query_length]
    context_ids, context_begin, context_end = self._tokenizer.tokenize_with_offsets(context)
    # Waterfall truncation keeps the (already capped) question whole and cuts the context.
    model_inputs = layers.BertPackInputs.bert_pack_inputs(
        [question_ids, context_ids], seq_length=seq_length, truncator='waterfall',
        **self._special_ids)
    logits = self.serve(**model_inputs)
    start_logits = tf.cast(logits['start_logits'], tf.float32)
    end_logits = tf.cast(logits['end_logits'], tf.float32)

    # Context tokens occupy packed positions [context_start, context_stop), [B] each: after
    # [CLS] question [SEP], and before the final [SEP], which always fits.
    context_start = tf.cast(question_ids.row_lengths(), tf.int32) + 2
    context_stop = tf.minimum(context_start + tf.cast(context_ids.row_lengths(), tf.int32),
                              seq_length - 1)
    positions = tf.range(seq_length)
    in_context = ((positions >= context_start[:, None]) &
                  (positions < context_stop[:, None]))  # [B, T]
    span_length = positions[None, :] - positions[:, None]  # [T, T]: end - start
    allowed = (in_context[:, :, None] & in_context[:, None, :] & (span_length >= 0) &
               (span_length < self._max_answer_length))  # [B, T (start), T (end)]
    span_scores = tf.where(allowed, start_logits[:, :, None] + end_logits[:, None, :],
                           float('-inf'))
    best = tf.argmax(tf.reshape(span_scores, [-1, seq_length * seq_length]), axis=-1,
                     output_type=tf.int32)  # [B], start * T + end
    score = tf.reduce_max(span_scores, axis=[1, 2])
    has_answer = tf.reduce_any(allowed, axis=[1, 2])
    if self._version_2_with_negative:
      null_score = start_logits[:, 0] + end_logits[:, 0]
      has_answer &= null_score - score <= self._null_score_diff_threshold
    start_position = tf.where(has_answer, best // seq_length, 0)
    end_position = tf.where(has_answer, best % seq_length, 0)

    def context_offset(offsets, position):
      # Context tokens past the window are never chosen, so offsets padded or cut to T tokens
      # hold every selectable one; a no-answer row reads a clipped index and is zeroed below.
      dense = offsets.to_tensor(default_value=0, shape=[None, seq_length])  # [B, T]
      index = tf.clip_by_value(position - context_start, 0, seq_length - 1)
      return tf.where(has_answer, tf.cast(tf.gather(dense, index, batch_dims=1), tf.int32), 0)

    start_byte = context_offset(context_begin, start_position)
    end_byte = context_offset(context_end, end_position)
    answer_text = tf.strings.substr(context, start_byte, end_byte - start_byte)
    answer_start = tf.strings.length(
        tf.strings.substr(context, tf.zeros_like(start_byte), start_byte), unit='UTF8_CHAR')
    return dict(
        answer_text=answer_text,
        answer_start=answer_start,
        answer_end=answer_start + tf.strings.length(answer_text, unit='UTF8_CHAR'),
        start_position=start_position,
        end_position=end_position,
        score=score,
        start_logits=start_logits,
        end_logits=end_logits)

  def get_inference_signatures(self, function_keys):
    """Model Garden's signatures plus `serve_text` (inputs `question`, `context`: [B] string)."""
    function_keys = dict(function_keys)
    signatures = {}
    if 'serve_text' in function_keys:
      signatures[function_keys.pop('serve_text')] = self.serve_text.get_concrete_function(
          question=tf.TensorSpec([None], tf.string, name='question'),
          context=tf.TensorSpec([None], tf.string, name='context'))
    signatures.update(super().get_inference_signatures(function_keys))
    return signatures
