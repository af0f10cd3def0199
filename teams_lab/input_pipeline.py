"""Input-pipeline throughput against the training step it feeds, side by side in one run.

`tools/benchmark_input_pipeline.py` runs it. Measures, on this machine and in this process:
  1. examples/s of one TEAMS training step (forward, losses, backward, AdamW update) of
     `experiment` at `seq_length` and `batch_size`, median over `train_steps` steps after
     warm-up;
  2. examples/s of the pretraining input pipeline in each format ('text', 'tfrecord',
     'masked_tfrecord') at the same shapes, producing batches as fast as it can;
and reports each pipeline's headroom = pipeline examples/s / training examples/s (the target is
>= 5). The TFRecords are written from `input` first (unmasked sequences and one static mask per
sequence), so all three formats read the same text. Results go to `<output>.md` and
`<output>.json`.
"""

import dataclasses
import json
import os
import platform
import statistics
import tempfile
import time

import tensorflow as tf

from official.core import exp_factory
from official.core import task_factory
from official.modeling import optimization

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import input_files
from teams_tf.data import pretrain_dataloader
from teams_tf.data import text_dataloader
from teams_tf.utils import hardware


@dataclasses.dataclass
class Settings:
  """One run; `tools/benchmark_input_pipeline.py`'s flags of the same names."""
  experiment: str = 'teams_small'
  seq_length: int = 128
  batch_size: int = 32
  input: str = 'sample:train'
  train_steps: int = 10
  pipeline_batches: int = 200
  output: str = 'benchmarks/input_pipeline'


def _data_config(settings, params, input_format, input_path):
  return params.task.train_data.replace(
      input_format=input_format, input_path=input_path, seq_length=settings.seq_length,
      max_predictions_per_seq=round(0.15 * settings.seq_length),
      global_batch_size=settings.batch_size, is_training=True, seed=1)


def _write_records(settings, params, directory):
  """Writes the input as unmasked and statically masked TFRecords; returns their paths."""
  config = _data_config(settings, params, 'text', settings.input)
  loader = pretrain_dataloader.PretrainDataLoader(config.replace(is_training=False))
  sequences = text_dataloader.text_sequences(
      input_files.list_input_files(settings.input), loader.vocabulary, settings.seq_length,
      config.lower_case)
  unmasked_path = os.path.join(directory, 'unmasked.tfrecord')
  masked_path = os.path.join(directory, 'masked.tfrecord')

  def feature(values, dtype=tf.int64):
    if dtype == tf.float32:
      return tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))

  with tf.io.TFRecordWriter(unmasked_path) as writer:
    for word_ids, input_mask, type_ids in sequences.as_numpy_iterator():
      writer.write(tf.train.Example(features=tf.train.Features(feature=dict(
          input_ids=feature(word_ids), input_mask=feature(input_mask),
          segment_ids=feature(type_ids)))).SerializeToString())
  with tf.io.TFRecordWriter(masked_path) as writer:
    for batch in loader.load().as_numpy_iterator():
      for row in range(len(batch['input_word_ids'])):
        writer.write(tf.train.Example(features=tf.train.Features(feature=dict(
            input_ids=feature(batch['input_word_ids'][row]),
            input_mask=feature(batch['input_mask'][row]),
            segment_ids=feature(batch['input_type_ids'][row]),
            masked_lm_positions=feature(batch['masked_lm_positions'][row]),
            masked_lm_ids=feature(batch['masked_lm_ids'][row]),
            masked_lm_weights=feature(batch['masked_lm_weights'][row], tf.float32),
        ))).SerializeToString())
  return {'text': settings.input, 'tfrecord': unmasked_path, 'masked_tfrecord': masked_path}


def _pipeline_examples_per_second(config, num_batches):
  iterator = iter(pretrain_dataloader.PretrainDataLoader(config).load())
  for _ in range(5):  # Warm-up: file opening, tokenizer tables, autotuning.
    next(iterator)
  start = time.perf_counter()
  for i in range(num_batches):
    next(iterator)
    if (i + 1) % 50 == 0:
      rate = (i + 1) * config.global_batch_size / (time.perf_counter() - start)
      print(f'  {config.input_format}: {i + 1}/{num_batches} batches, {rate:,.0f} examples/s',
            flush=True)
  return num_batches * config.global_batch_size / (time.perf_counter() - start)


def _training_examples_per_second(settings, params):
  task = task_factory.get_task(params.task)
  model = task.build_model()
  factory = optimization.OptimizerFactory(params.trainer.optimizer_config)
  optimizer = factory.build_optimizer(factory.build_learning_rate())
  batch = next(iter(task.build_inputs(params.task.train_data)))
  step = tf.function(lambda: task.train_step(batch, model, optimizer))
  for _ in range(2):
    step()
  times = []
  for i in range(settings.train_steps):
    start = time.perf_counter()
    step()['loss'].numpy()
    times.append(time.perf_counter() - start)
    remaining = statistics.median(times) * (settings.train_steps - i - 1)
    print(f'  train step {i + 1}/{settings.train_steps}: {times[-1]:.2f} s '
          f'({settings.batch_size / times[-1]:.1f} examples/s), ETA {remaining:.0f} s',
          flush=True)
  return settings.batch_size / statistics.median(times)


def run(settings):
  """Measures both sides and writes `<settings.output>.{md,json}`; returns the results dict."""
  params = exp_factory.get_exp_config(settings.experiment)
  params.task.train_data = _data_config(settings, params, 'text', settings.input)
  params.task.model.encoder.max_position_embeddings = max(
      params.task.model.encoder.max_position_embeddings, settings.seq_length)
  print(f'Training {settings.experiment} at T={settings.seq_length}, B={settings.batch_size}:',
        flush=True)
  train_rate = _training_examples_per_second(settings, params)
  results = dict(
      machine=dict(platform=platform.platform(), processor=hardware.cpu_model(),
                   cpus=os.cpu_count(), tensorflow=tf.__version__),
      experiment=settings.experiment, seq_length=settings.seq_length,
      batch_size=settings.batch_size, input=settings.input, train_examples_per_second=train_rate,
      pipelines={})
  with tempfile.TemporaryDirectory() as directory:
    print('Writing TFRecords for the record formats ...', flush=True)
    paths = _write_records(settings, params, directory)
    for input_format, path in paths.items():
      print(f'Pipeline {input_format}:', flush=True)
      rate = _pipeline_examples_per_second(
          _data_config(settings, params, input_format, path), settings.pipeline_batches)
      results['pipelines'][input_format] = dict(
          examples_per_second=rate, headroom=rate / train_rate)

  lines = [
      f'# Input pipeline vs training step ({results["experiment"]}, T={results["seq_length"]}, '
      f'B={results["batch_size"]})', '',
      f'Machine: {results["machine"]["processor"]}, {results["machine"]["cpus"]} CPUs, '
      f'{results["machine"]["platform"]}, '
      f'TensorFlow {results["machine"]["tensorflow"]}. Input: `{results["input"]}`.', '',
      f'Training step: {train_rate:.1f} examples/s (median of {settings.train_steps} steps).', '',
      '| input_format | pipeline examples/s | headroom (pipeline / training) | target >= 5 |',
      '|---|---|---|---|',
  ]
  for input_format, row in results['pipelines'].items():
    lines.append(f'| {input_format} | {row["examples_per_second"]:,.0f} | '
                 f'{row["headroom"]:.0f}x | {"met" if row["headroom"] >= 5 else "MISSED"} |')
  report = '\n'.join(lines) + '\n'
  os.makedirs(os.path.dirname(settings.output) or '.', exist_ok=True)
  with open(settings.output + '.md', 'w') as f:
    f.write(report)
  with open(settings.output + '.json', 'w') as f:
    json.dump(results, f, indent=2)
  print(report)
  print(f'Wrote {settings.output}.md and {settings.output}.json')
  return results

