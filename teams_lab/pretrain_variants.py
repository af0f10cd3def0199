"""One variant of the pretraining throughput benchmark: build it, time its step, count its FLOPs.

A variant is (implementation, objective, size, setting). Implementations: 'ours' (this project's
Task and model), 'official' (Model Garden's TEAMS project or its ELECTRA task, configured to match
ours; see `model_garden_peers`), 'official_patched' (the same with the logits cast to float32
before its samplers and losses, without which it fails to build under mixed bfloat16) and 'hf'
(Hugging Face's PyTorch ELECTRA modules assembled into the same ELECTRA step). Settings: float32
or mixed bfloat16, each with or without XLA (`jit_compile=True` on the whole step). Each variant
runs in its own process
(`python -m teams_lab.pretrain_variants <spec.json>`), so its peak RSS is its own;
TensorFlow, Model Garden and this project's TensorFlow modules are imported inside the functions
that need them, so that the PyTorch process imports none of them.
"""

import itertools
import json
import os
import resource
import statistics
import sys
import tempfile
import time

import numpy as np

from teams_tf.training import flops

# key: (experiment objective, experiment variant, model fields set over it).
OBJECTIVES = {
    'teams': ('teams', None, {}),
    'electra': ('electra', None, {}),
    # ELECTRA's objective and FFN head with TEAMS's generator (half depth, full width, bottom half
    # shared), the baseline of the TEAMS overhead ratio.
    'electra_teams_generator': ('electra', 'teams_reimpl', {'num_shared_layers': None}),
    'bert': ('bert', None, {}),
    'coco_lm': ('coco_lm', None, {}),
    'taco': ('taco', None, {}),
    'script': ('script', None, {}),
}
# Benchmark size -> experiment size. 'mini' is the learning and time-to-accuracy recipe (pre-LN,
# relative positions): ours only (`check_size`).
SIZES = {'tiny': 'demo', 'mini': 'mini', 'small': 'small'}
SETTINGS = {  # name: (mixed precision dtype or None, jit_compile)
    'fp32': (None, False), 'fp32_xla': (None, True),
    'bf16': ('bfloat16', False), 'bf16_xla': ('bfloat16', True),
}
BATCH_KEYS = ('input_word_ids', 'input_mask', 'input_type_ids', 'masked_lm_positions',
              'masked_lm_ids', 'masked_lm_weights')
# Starts the stderr lines of a variant's process that the parent relays (`progress`); the rest
# of its stderr (TensorFlow's logs) is kept only as the tail shown when the variant fails.
PROGRESS_PREFIX = 'benchmark_pretrain: '


def progress(message):
  """A progress line on stderr; the parent process relays lines with `PROGRESS_PREFIX`."""
  print(f'{PROGRESS_PREFIX}{message}', file=sys.stderr, flush=True)


def check_size(implementation, size):
  """Raises ValueError if `implementation` cannot build `size`: only ours builds 'mini'.

  `implementation` is one of ours ('ours', or 'train' for `teams_tf.train`) or a peer's
  ('official', 'official_patched', 'hf').
  """
  if size == 'mini' and implementation not in ('ours', 'train'):
    raise ValueError(f"size 'mini' is teams_tf's learning recipe (pre-LN, relative position "
                     f'bias), which {implementation!r} cannot build; time mini with '
                     f"--implementations=ours,train, or run {implementation!r} at size 'tiny' or "
                     f"'small'.")


def experiment_params(objective_key, size, seq_length, batch_size, predictions, vocab_size):
  """Our registered experiment `<objective>_<demo|mini|small>[_variant]` at the benchmark's shapes.

  `vocab_size` (> 0) replaces the encoder vocabulary of the mini and small sizes (the paper's is
  30,522, the learning benchmark's 7,899; the experiments default to the embedded sample's); tiny
  keeps the demo vocabulary.
  """
  from teams_tf.configs import encoders  # pylint: disable=g-import-not-at-top
  from teams_tf.registry import experiments  # pylint: disable=g-import-not-at-top
  objective, variant, fields = OBJECTIVES[objective_key]
  params = experiments.pretraining_experiment(objective, SIZES[size], variant)
  if size == 'tiny':
    # The demo's own recipe (pre-LN, relative positions) is one Model Garden's TEAMS cannot
    # build; tiny is the paper architecture (post-LN, absolute positions, dropout) at demo size.
    params.task.model.encoder = encoders.encoder_config(
        'tiny', vocab_size=params.task.model.encoder.vocab_size, max_position_embeddings=128)
    params.task.model.relative_position_bias = False
  for name, value in fields.items():
    setattr(params.task.model, name, value)
  for data in (params.task.train_data, params.task.validation_data):
    data.seq_length, data.max_predictions_per_seq = seq_length, predictions
    data.global_batch_size = batch_size
  encoder = params.task.model.encoder
  encoder.max_position_embeddings = max(encoder.max_position_embeddings, seq_length)
  if vocab_size and size != 'tiny':
    encoder.vocab_size = vocab_size
  return params


def our_shapes(model_config, batch, seq_length, predictions):
  """(objective for `flops.step_flops`, its shapes) of one of our model configs."""
  from teams_tf.training import experiment_flops  # pylint: disable=g-import-not-at-top
  return experiment_flops.model_shapes(model_config, batch, seq_length, predictions)


def hf_shapes(params, batch, seq_length, predictions):
  """Shapes and optimiser values of our ELECTRA experiment, for the PyTorch process."""
  shapes = our_shapes(params.task.model, batch, seq_length, predictions)[1]
  optimizer = params.trainer.optimizer_config
  return dict(shapes, max_position_embeddings=params.task.model.encoder.max_position_embeddings,
              learning_rate=optimizer.learning_rate.polynomial.initial_learning_rate,
              train_steps=optimizer.learning_rate.polynomial.decay_steps,
              warmup_steps=optimizer.warmup.linear.warmup_steps,
              rtd_loss_weight=params.task.model.rtd_loss_weight)


def _time_steps(step, batch, spec, batch_size):
  """Runs warm-up and timed steps; returns timing and loss facts."""
  label = spec['label']
  losses, warmup_times = [], []
  for i in range(spec['warmup']):
    step_start = time.perf_counter()
    losses.append(float(step(batch)))
    warmup_times.append(time.perf_counter() - step_start)
    progress(f'{label}: warm-up step {i + 1}/{spec["warmup"]}: {warmup_times[-1]:.2f} s')
  times = []
  for i in range(spec['steps']):
    step_start = time.perf_counter()
    losses.append(float(step(batch)))
    times.append(time.perf_counter() - step_start)
    median = statistics.median(times)
    progress(f'{label}: step {i + 1}/{spec["steps"]}: {times[-1]:.3f} s '
             f'({1 / median:.2f} steps/s, {batch_size / median:.1f} examples/s median), '
             f'ETA {median * (spec["steps"] - i - 1):.0f} s')
  return dict(step_seconds=times, step_seconds_median=statistics.median(times),
              first_step_seconds=warmup_times[0], warmup_seconds=sum(warmup_times), losses=losses,
              finite=bool(np.all(np.isfinite(losses))))


def _rss_mib():
  """Peak resident set size of this process so far, MiB (Linux reports KiB)."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sample_batches(count, seq_length, batch_size, predictions, seed=None):
  """`count` batches (dicts of NumPy arrays, `BATCH_KEYS`) of our pipeline on the sample corpus.

  `seed` fixes the masks and the order of the texts (None: the experiment's).
  """
  from official.core import task_factory  # pylint: disable=g-import-not-at-top

  from teams_tf import registry_imports  # pylint: disable=g-import-not-at-top,unused-import
  params = experiment_params('bert', 'tiny', seq_length, batch_size, predictions, 0)
  if seed is not None:
    params.task.train_data.seed = seed
  dataset = task_factory.get_task(params.task).build_inputs(params.task.train_data)
  return [{key: batch[key].numpy() for key in BATCH_KEYS}
          for batch in itertools.islice(dataset, count)]


def write_batch(path, seq_length, batch_size, predictions):
  """The fixed batch every variant trains on: our pipeline on the sample corpus; its statistics."""
  arrays = sample_batches(1, seq_length, batch_size, predictions)[0]
  np.savez(path, **arrays)
  return dict(input=experiment_params('bert', 'tiny', seq_length, batch_size, predictions,
                                      0).task.train_data.input_path,
              real_token_fraction=float(arrays['input_mask'].mean()),
              masked_per_sequence=float(arrays['masked_lm_weights'].sum(1).mean()))


def _load_batch(path):
  with np.load(path) as arrays:
    return {key: arrays[key] for key in BATCH_KEYS}


def define_step_flags(objective, size, setting, seq_length, batch_size, predictions,
                      vocab_size):
  """A tool's absl flags naming one step of this benchmark, with these defaults.

  Returns:
    Their FlagHolders keyed as `build_tf_step`'s spec (`predictions` is --max_predictions).
  """
  from absl import flags  # pylint: disable=g-import-not-at-top
  return dict(
      implementation=flags.DEFINE_enum(
          'implementation', 'ours', ['ours', 'official', 'official_patched'],
          'Whose model: ours or Model Garden\'s (teams, electra).'),
      objective=flags.DEFINE_enum('objective', objective, list(OBJECTIVES), 'Objective.'),
      size=flags.DEFINE_enum('size', size, list(SIZES),
                             'tiny (demo), mini (the learning recipe, ours only) or small.'),
      setting=flags.DEFINE_enum('setting', setting, list(SETTINGS), 'Precision/XLA.'),
      seq_length=flags.DEFINE_integer('seq_length', seq_length, 'Sequence length T.'),
      batch_size=flags.DEFINE_integer('batch_size', batch_size, 'Batch size B.'),
      predictions=flags.DEFINE_integer('max_predictions', predictions, 'Prediction slots P.'),
      vocab_size=flags.DEFINE_integer('vocab_size', vocab_size, 'Vocabulary of mini and small.'))


def build_fixed_batch_step(spec):
  """`build_tf_step` of `spec` (no `batch_file`) on this benchmark's fixed batch at its shapes."""
  with tempfile.TemporaryDirectory() as directory:
    batch_file = os.path.join(directory, 'batch.npz')
    write_batch(batch_file, spec['seq_length'], spec['batch_size'], spec['predictions'])
    return build_tf_step(dict(spec, batch_file=batch_file))


def build_tf_step(spec):
  """Builds one of our or Model Garden's models and its compiled training step.

  Returns:
    Dict with `step` (a `tf.function` of the batch returning the total loss), `batch` (dict of
    tensors from `spec['batch_file']`; None without one), `model`, `task`, `optimizer` and
    `metrics` (what `step` uses), `flops` and `flop_terms` (`flops.step_flops`) and
    `baseline_rss_mib` (after the imports, before anything is built). `spec['seed']` (default
    0) seeds the initial weights.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top

  from official.core import task_factory  # pylint: disable=g-import-not-at-top
  from official.core import train_utils  # pylint: disable=g-import-not-at-top
  from official.modeling import performance  # pylint: disable=g-import-not-at-top

  from teams_tf import registry_imports  # pylint: disable=g-import-not-at-top,unused-import

  baseline_rss = _rss_mib()  # TensorFlow, Model Garden and teams_tf imported, nothing built.
  check_size(spec['implementation'], spec['size'])
  precision, jit_compile = SETTINGS[spec['setting']]
  params = experiment_params(spec['objective'], spec['size'], spec['seq_length'],
                             spec['batch_size'], spec['predictions'], spec['vocab_size'])
  # The batch comes from the pipeline in the parent process; with no input paths the task skips
  # its data checks, which would refuse the paper's vocabulary for the sample corpus's ids (they
  # index the first rows of the larger table).
  params.task.train_data.input_path = params.task.validation_data.input_path = ''
  params.runtime.mixed_precision_dtype = precision
  if precision:  # Before any layer is built, as teams_tf.train does.
    performance.set_mixed_precision_policy(precision)
  tf_keras.utils.set_random_seed(spec.get('seed', 0))  # Same initial weights in every run.
  if spec['implementation'] == 'ours':
    flops_objective, shapes = our_shapes(params.task.model, spec['batch_size'],
                                         spec['seq_length'], spec['predictions'])
  else:
    # Only Model Garden's variants import it, so that ours' peak RSS holds none of its modules.
    from teams_lab import model_garden_peers  # pylint: disable=g-import-not-at-top
    params, flops_objective, shapes = model_garden_peers.official_params(params, spec)
  step_flops, terms = flops.step_flops(flops_objective, shapes)

  task = task_factory.get_task(params.task)
  if spec['implementation'] == 'official_patched':
    model_garden_peers.cast_official_logits(task)
  model = task.build_model()
  optimizer = train_utils.create_optimizer(task, params)
  metrics = task.build_metrics(training=True)
  batch = None
  if spec.get('batch_file'):
    batch = {key: tf.constant(value) for key, value in _load_batch(spec['batch_file']).items()}

  @tf.function(jit_compile=jit_compile)
  def step(inputs):
    return task.train_step(inputs, model, optimizer, metrics=metrics)[task.loss]

  return dict(step=step, batch=batch, model=model, task=task, optimizer=optimizer,
              metrics=metrics, flops=step_flops, flop_terms=terms, baseline_rss_mib=baseline_rss)


def loss_curves(spec, data, terms, window):
  """Trains `build_tf_step(spec)` on `data` and records each loss term at every step.

  Args:
    spec: as for `build_tf_step`.
    data: list of batches (dicts of arrays), one per step.
    terms: loss term -> {implementation: name of the metric reporting it}; None takes the total
      loss the step returns.
    window: steps between progress lines (with the mean total loss over the last `window`).

  Returns:
    {term: [value per step]}.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  built = build_tf_step(spec)
  metrics = {metric.name: metric for metric in built['metrics']}
  curves = {term: [] for term in terms}
  label = f'{spec["implementation"]} seed {spec.get("seed", 0)}'
  start = time.perf_counter()
  for i, arrays in enumerate(data):
    for metric in metrics.values():
      metric.reset_state()
    total = built['step']({key: tf.constant(value) for key, value in arrays.items()})
    for term, names in terms.items():
      curves[term].append(float(metrics[names[spec['implementation']]].result() if names
                                else total))
    if (i + 1) % window == 0 or i + 1 == len(data):
      rate = (i + 1) / (time.perf_counter() - start)
      progress(f'{label}: step {i + 1}/{len(data)}, total loss '
               f'{statistics.mean(curves["total"][-window:]):.4f}, {rate:.1f} steps/s, '
               f'ETA {(len(data) - i - 1) / rate:.0f} s')
  return curves


def run_tf_variant(spec):
  """Builds and times one of our or Model Garden's models; returns the result dict."""
  built = build_tf_step(spec)
  result = _time_steps(built['step'], built['batch'], spec, spec['batch_size'])
  result.update(
      flops_per_step=built['flops'], flop_terms=[list(term) for term in built['flop_terms']],
      parameters=int(sum(np.prod(v.shape) for v in built['model'].trainable_variables)),
      peak_rss_mib=_rss_mib(), baseline_rss_mib=built['baseline_rss_mib'])
  return result


def run_hf_variant(spec):
  """Hugging Face PyTorch ELECTRA modules in ELECTRA's step at our ELECTRA's shapes.

  Generator `ElectraForMaskedLM` and discriminator `ElectraForPreTraining` with the generator's
  embeddings (word, position, type, LayerNorm) being the discriminator's and its output layer tied
  to the word table, as ELECTRA; MLM logits only at the P masked positions (as Model Garden's
  MaskedLM; `ElectraForMaskedLM.forward` would compute all T), Gumbel-max sampling, loss
  MLM + λ·RTD, torch AdamW (weight decay 0.01 except LayerNorm/bias, ε 1e-6) with gradient
  clipping at norm 1 and linear warm-up/decay. bfloat16 is `torch.autocast`.
  """
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  baseline_rss = _rss_mib()  # torch and transformers imported, nothing built.
  torch.manual_seed(0)
  shapes = spec['hf_shapes']
  gen_dims, disc_dims = shapes['generator'], shapes['encoder']

  def config(dims):
    return transformers.ElectraConfig(
        vocab_size=shapes['vocab_size'], embedding_size=shapes['embedding'],
        hidden_size=dims['hidden'], num_hidden_layers=dims['layers'],
        num_attention_heads=dims['heads'], intermediate_size=dims['intermediate'],
        hidden_act='gelu', hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
        max_position_embeddings=shapes['max_position_embeddings'], type_vocab_size=2)

  generator = transformers.ElectraForMaskedLM(config(gen_dims))
  discriminator = transformers.ElectraForPreTraining(config(disc_dims))
  generator.electra.embeddings = discriminator.electra.embeddings
  generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
  modules = torch.nn.ModuleDict(dict(generator=generator, discriminator=discriminator))
  modules.train()
  decay, no_decay = [], []
  for name, parameter in modules.named_parameters():  # Shared parameters are listed once.
    (no_decay if 'LayerNorm' in name or name.endswith('bias') else decay).append(parameter)
  optimizer = torch.optim.AdamW(
      [dict(params=decay, weight_decay=0.01), dict(params=no_decay, weight_decay=0.0)],
      lr=shapes['learning_rate'], betas=(0.9, 0.999), eps=1e-6)
  warmup, total = shapes['warmup_steps'], shapes['train_steps']
  schedule = torch.optim.lr_scheduler.LambdaLR(
      optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / (total - warmup))))
  batch = {key: torch.from_numpy(value) for key, value in _load_batch(spec['batch_file']).items()}
  ids, mask = batch['input_word_ids'].long(), batch['input_mask'].long()
  types, positions = batch['input_type_ids'].long(), batch['masked_lm_positions'].long()
  targets, weights = batch['masked_lm_ids'].long(), batch['masked_lm_weights'].float()
  original = ids.scatter(1, positions, targets)
  slot = weights > 0
  bf16 = SETTINGS[spec['setting']][0] == 'bfloat16'
  rtd_weight = shapes['rtd_loss_weight']

  def step(_):
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
      hidden = generator.electra(ids, attention_mask=mask, token_type_ids=types)[0]
      hidden = torch.gather(hidden, 1, positions[..., None].expand(-1, -1, hidden.shape[-1]))
      logits = generator.generator_lm_head(generator.generator_predictions(hidden)).float()
      losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction='none')
      mlm_loss = (losses * weights).sum() / weights.sum().clamp(min=1e-9)
      with torch.no_grad():
        uniform = torch.rand_like(logits).clamp(1e-9, 1 - 1e-9)
        sampled = torch.argmax(logits - torch.log(-torch.log(uniform)), -1)
        corrupted = ids.scatter(1, positions, torch.where(slot, sampled, targets))
        labels = (corrupted != original).float()
      rtd_logits = discriminator(corrupted, attention_mask=mask, token_type_ids=types)[0].float()
      rtd = torch.nn.functional.binary_cross_entropy_with_logits(
          rtd_logits, labels, reduction='none')
      rtd_loss = (rtd * mask).sum() / mask.sum()
      loss = mlm_loss + rtd_weight * rtd_loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(modules.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()

  result = _time_steps(step, None, spec, spec['batch_size'])
  result.update(
      flops_per_step=flops.step_flops('electra', shapes)[0],
      parameters=sum(p.numel() for p in modules.parameters()),
      peak_rss_mib=_rss_mib(), baseline_rss_mib=baseline_rss,
      versions=dict(torch=torch.__version__, transformers=transformers.__version__),
      threads=torch.get_num_threads())
  return result


def run_train_variant(spec):
  """`teams_tf.train` itself at the variant's experiment, setting and shapes; the result dict.

  Trains `spec['loops']` loops of `spec['steps']` steps on the experiment's own input (the
  sample corpus as text); `step_seconds_median` is the steady state (loops after the first) and
  `first_step_seconds` the first loop, so the report's throughput columns apply unchanged.
  """
  import tempfile  # pylint: disable=g-import-not-at-top

  from teams_lab import train_loop_throughput  # pylint: disable=g-import-not-at-top
  from teams_tf.registry import experiments  # pylint: disable=g-import-not-at-top

  params = experiment_params(spec['objective'], spec['size'], spec['seq_length'],
                             spec['batch_size'], spec['predictions'], spec['vocab_size'])
  params.runtime.mixed_precision_dtype = SETTINGS[spec['setting']][0]
  if params.runtime.distribution_strategy == 'tpu':
    # The paper sizes are registered for TPUs; here, docs/distributed.md's CPU/GPU override.
    params.runtime.distribution_strategy = 'mirrored'
  params.trainer.max_train_flops = params.trainer.max_train_minutes = None
  objective, variant, _ = OBJECTIVES[spec['objective']]
  experiment = experiments.experiment_name(objective, SIZES[spec['size']], variant)
  flops_objective, shapes = our_shapes(params.task.model, spec['batch_size'],
                                       spec['seq_length'], spec['predictions'])
  step_flops, terms = flops.step_flops(flops_objective, shapes)
  with tempfile.TemporaryDirectory() as work_dir:
    # Both splits read one vocabulary (`experiment_params`); pad it once for both.
    data = params.task.train_data, params.task.validation_data
    vocab_size = params.task.model.encoder.vocab_size
    if train_loop_throughput.vocabulary_size(data[0].vocab_file) != vocab_size:
      padded = train_loop_throughput.write_padded_vocabulary(
          data[0].vocab_file, vocab_size, os.path.join(work_dir, 'vocab.txt'))
      data[0].vocab_file = data[1].vocab_file = padded
    progress(f'{spec["label"]}: teams_tf.train, {spec["loops"]} loops of {spec["steps"]} steps')
    measured = train_loop_throughput.measure(params, experiment, work_dir, spec['loops'],
                                             spec['steps'])
  progress(f'{spec["label"]}: {measured["steady_steps_per_second"]:.2f} steps/s steady, first '
           f'loop {measured["first_loop_seconds"]:.1f} s')
  return dict(
      step_seconds=[1 / rate for rate in measured['loop_steps_per_second'][1:]],
      step_seconds_median=1 / measured['steady_steps_per_second'],
      first_step_seconds=measured['first_loop_seconds'], losses=measured['losses'],
      finite=measured['finite'], loop_steps_per_second=measured['loop_steps_per_second'],
      wall_seconds=measured['wall_seconds'], command=measured['command'],
      flops_per_step=step_flops, flop_terms=[list(term) for term in terms],
      peak_rss_mib=measured['peak_rss_mib'])


def run_child(spec_path):
  """Entry point of a variant process: runs the spec in `spec_path`, writes the result JSON."""
  with open(spec_path) as f:
    spec = json.load(f)
  runner = {'hf': run_hf_variant, 'train': run_train_variant}.get(spec['implementation'],
                                                                  run_tf_variant)
  result = runner(spec)
  with open(spec['output'], 'w') as f:
    json.dump(result, f)


if __name__ == '__main__':
  run_child(sys.argv[1])
  sys.stderr.flush()
  # The result is written; TensorFlow's interpreter teardown would add seconds per variant.
  os._exit(0)  # pylint: disable=protected-access
