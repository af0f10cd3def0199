"""Analytic FLOPs of one pretraining step (forward + backward), counted from the model's shapes.

Only matrix products are counted: the dense projections, the attention score and value products,
and the output layers. Softmax, GELU, LayerNorm, dropout, Gumbel noise and sampling, gathers and
scatters, the losses and the AdamW update are left out (they are memory-bound, not FLOP-bound, and
a few percent of the total at the paper sizes). A [m, k] x [k, n] product costs 2mkn FLOPs; its
backward pass costs twice that (the gradients with respect to both operands), so every pass that
receives gradients counts 3 x its forward FLOPs and a pass without gradients (COCO-LM's dropout-free
sampling pass) counts 1 x. Shapes: B batch, T tokens, P prediction slots per sequence (padded slots
included: the heads compute them), V vocabulary, E embedding width, and per encoder L layers, H
hidden, I FFN width. `FORMULA` is the text the benchmark prints; the functions below implement it.
`training.experiment_flops` reads these shapes from an experiment config (training budgets,
`tools/benchmark_pretrain.py`). This module has no TensorFlow dependency, so that the benchmark's
PyTorch process can use it and tests can check the numbers independently.
"""

TRAIN = 3  # forward + backward of a pass that receives gradients
FORWARD_ONLY = 1

FORMULA = """\
Matmul FLOPs only (2mkn per [m,k]x[k,n]); a pass that gets gradients counts 3 x its forward, a pass
without (COCO-LM's dropout-free sampling pass) 1 x. Not counted: softmax, GELU, LayerNorm, dropout,
sampling, gathers/scatters, losses, the AdamW update.
  layer(T)     = 2·B·T·(4H² + 2HI) + 4·B·T²·H   (QKV + output projections, FFN, QKᵀ and AV;
                 x 3 = 6 · matmul params · tokens + 12·B·T²·H)
  encoder(T)   = L·layer(T) + [E ≠ H]·2·B·T·E·H   (+ the embedding projection E -> H)
  mlm(rows, H) = 2·rows·H·E + 2·rows·E·V          (MaskedLM: dense H -> E, tied output logits)
  BERT     = 3·[encoder + mlm(B·P, H)]
  ELECTRA  = 3·[encoder_G + mlm(B·P, H_G) + encoder_D + 2·B·T·H² + 2·B·T·H]      (FFN RTD head)
  TEAMS    = 3·[encoder_G + mlm(B·P, H_G) + encoder_D + layer(T) + 2·B·T·H      (attention RTD)
                + 2·B·P·H·E + 2·B·P·(K+1)·E]                               (MWS head, K negatives)
             Model Garden's TEAMS RTD head adds a dense H -> H: + 3·2·B·T·H²
  SCRIPT   = 3·[2·encoder + mlm(B·P, H) + mlm(B·T, H)]    (MLM pass; critic pass, every token)
  TACO     = 3·[encoder + mlm(B·P, H) + 2·B·T·(K+1)·H + [E ≠ H]·2·B·T·E·H]     (K = 50; e = E->H)
  COCO-LM  = 4·[encoder_aux + mlm(B·P, H_aux)]       (3 x training pass + 1 x sampling pass)
             + 3·[encoder(T) + 2·B·T·H + [E ≠ H]·2·B·P·H·E + 2·B·P·E·V       (main, CLM head)
                  + encoder(T_crop) + 2·(2B)²·H]       (cropped view, SCL; T_crop = 1 + ⌈0.9·(T−1)⌉)
  G: generator, D: discriminator, aux: auxiliary model, each with its own L, H, I."""


def layer_forward(batch, seq_length, hidden, intermediate):
  """Forward FLOPs of one transformer layer (projections, FFN, attention products)."""
  tokens = batch * seq_length
  return (2 * tokens * (4 * hidden * hidden + 2 * hidden * intermediate) +
          4 * batch * seq_length * seq_length * hidden)


def encoder_forward(batch, seq_length, num_layers, hidden, intermediate, embedding):
  """Forward FLOPs of an encoder: its layers plus its embedding projection (if E != H)."""
  projection = 2 * batch * seq_length * embedding * hidden if embedding != hidden else 0
  return num_layers * layer_forward(batch, seq_length, hidden, intermediate) + projection


def mlm_head_forward(rows, hidden, embedding, vocab_size):
  """Forward FLOPs of Model Garden's MaskedLM on `rows` vectors: dense H -> E, tied logits."""
  return 2 * rows * hidden * embedding + 2 * rows * embedding * vocab_size


def _total(terms):
  return sum(forward * multiplier for _, forward, multiplier in terms)


def _encoder_terms(name, dims, batch, seq_length, multiplier=TRAIN):
  return [(name, encoder_forward(batch, seq_length, dims['layers'], dims['hidden'],
                                 dims['intermediate'], dims['embedding']), multiplier)]


def step_flops(objective, shapes):
  """FLOPs of one training step and their breakdown.

  Args:
    objective: 'bert', 'electra', 'teams', 'script', 'taco' or 'coco_lm'.
    shapes: dict with `batch`, `seq_length`, `predictions` (P), `vocab_size`, `embedding` (E),
      `encoder` (dict `layers`, `hidden`, `intermediate`, `embedding`) and per objective:
      electra/teams `generator` (same keys), `rtd_head` ('attention', 'ffn', 'official_attention'
      or None), `num_negatives` (K, 0 = no MWS), `mws_task_layer` (bool); script
      `straight_through`; taco `num_negatives`, `mlm_all_positions`; coco_lm `generator` (or
      None for random replacements), `sample_without_dropout`, `lm_positions` ('masked', 'all' or
      None), `crop_length` (0 = no SCL).

  Returns:
    (total FLOPs as int, list of (term name, forward FLOPs, multiplier)).

  Raises:
    ValueError: an unknown objective or RTD head.
  """
  b, t, p = shapes['batch'], shapes['seq_length'], shapes['predictions']
  v, e = shapes['vocab_size'], shapes['embedding']
  enc = shapes['encoder']
  h = enc['hidden']
  terms = []
  if objective == 'bert':
    terms += _encoder_terms('encoder', enc, b, t)
    terms.append(('MLM head', mlm_head_forward(b * p, h, e, v), TRAIN))
  elif objective in ('electra', 'teams'):
    gen = shapes['generator']
    terms += _encoder_terms('generator', gen, b, t)
    terms.append(('generator MLM head', mlm_head_forward(b * p, gen['hidden'], e, v), TRAIN))
    terms += _encoder_terms('discriminator', enc, b, t)
    head = shapes['rtd_head']
    if head == 'ffn':
      terms.append(('FFN RTD head', 2 * b * t * h * h + 2 * b * t * h, TRAIN))
    elif head in ('attention', 'official_attention'):
      rtd = layer_forward(b, t, h, enc['intermediate']) + 2 * b * t * h
      if head == 'official_attention':
        rtd += 2 * b * t * h * h
      terms.append(('attention RTD head', rtd, TRAIN))
    elif head is not None:
      raise ValueError(f'rtd_head={head!r} is not ffn, attention or official_attention.')
    k = shapes.get('num_negatives', 0)
    if k:
      mws = 2 * b * p * h * e + 2 * b * p * (k + 1) * e
      if shapes.get('mws_task_layer'):
        mws += layer_forward(b, t, h, enc['intermediate'])
      terms.append(('MWS head', mws, TRAIN))
  elif objective == 'script':
    terms += _encoder_terms('encoder, MLM pass', enc, b, t)
    terms.append(('MLM head, masked positions', mlm_head_forward(b * p, h, e, v), TRAIN))
    terms += _encoder_terms('encoder, critic pass', enc, b, t)
    terms.append(('MLM head, every position', mlm_head_forward(b * t, h, e, v), TRAIN))
    if shapes.get('straight_through'):
      terms.append(('straight-through embeddings', 2 * b * p * v * e, TRAIN))
  elif objective == 'taco':
    rows = b * t if shapes.get('mlm_all_positions') else b * p
    terms += _encoder_terms('encoder', enc, b, t)
    terms.append(('MLM head', mlm_head_forward(rows, h, e, v), TRAIN))
    if e != h:
      terms.append(('static embeddings e', 2 * b * t * e * h, TRAIN))
    terms.append(('token-alignment similarities',
                  2 * b * t * (shapes['num_negatives'] + 1) * h, TRAIN))
  elif objective == 'coco_lm':
    gen = shapes['generator']
    if gen is not None:
      aux = (encoder_forward(b, t, gen['layers'], gen['hidden'], gen['intermediate'],
                             gen['embedding']) + mlm_head_forward(b * p, gen['hidden'], e, v))
      terms.append(('auxiliary + MLM head', aux, TRAIN))
      if shapes.get('sample_without_dropout'):
        terms.append(('auxiliary sampling pass (no gradient)', aux, FORWARD_ONLY))
    terms += _encoder_terms('main', enc, b, t)
    clm = 2 * b * t * h
    lm_rows = {'masked': b * p, 'all': b * t, None: 0}[shapes.get('lm_positions')]
    if lm_rows:
      clm += (2 * lm_rows * h * e if h != e else 0) + 2 * lm_rows * e * v
    terms.append(('CLM head', clm, TRAIN))
    crop = shapes.get('crop_length', 0)
    if crop:
      terms += _encoder_terms('main, cropped view', enc, b, crop)
      terms.append(('SCL similarities', 2 * (2 * b) * (2 * b) * h, TRAIN))
  else:
    raise ValueError(f'Unknown objective {objective!r} for FLOP counting.')
  return _total(terms), terms
