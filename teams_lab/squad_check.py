"""SQuAD on real text, as a functional check of the fine-tuning and serving path.

The only real SQuAD file here is v1.1 dev (48 articles); no train set can be fetched. So its
articles are split: a seeded random `held_out` of them is kept out of training, the rest is
converted with Model Garden's `squad_lib` into training records, a kept encoder is fine-tuned on
them through `python -m teams_tf.train --experiment=squad_v1_<size>`, and the held-out articles are
scored by Model Garden's official v1.1 EM/F1 during its evaluation. Beside it, on the same
held-out questions and with the same scorer, two answers that read no model:
  first sentence: the first sentence of the paragraph, whatever the question;
  best-overlap sentence: the paragraph's sentence sharing the most distinct words with the
    question (the lexical idea of the SQuAD paper's sliding-window baseline, at sentence level).
A fine-tuned model that does not clear them has not learned to find answers. The fine-tuned model
is then exported (`teams-export --kind=squad`) and asked held-out questions in a fresh process.

This checks the pipeline on real text at laptop scale; it is not a SQuAD benchmark (the model is
trained on a few thousand questions from dev, not on SQuAD's 87,599 training questions).
"""

import collections
import json
import os
import re
import subprocess
import sys
import time
from typing import Callable, Optional, Sequence

import numpy as np

from official.core import exp_factory
from official.nlp.data import squad_lib
from official.nlp.tools import squad_evaluate_v1_1

from teams_tf.data import embedded
from teams_tf.training import run_settings
from teams_tf.training import run_summary
from teams_tf.utils import atomic_files
from teams_tf.utils import checkpoint_paths
from teams_tf.utils import hardware

# Words too common to say which sentence answers a question.
_STOP_WORDS = frozenset(
    'a an and are as at be by did do does for from had has have how in is it its of on or that '
    'the their there this to was were what when where which who whom whose why with'.split())
_SENTENCE_END = re.compile(r'(?<=[.!?])\s+(?=[A-Z0-9"\'(])')


def split_articles(dataset: list[dict], held_out: int,
                   seed: int) -> tuple[list[dict], list[dict]]:
  """(training articles, held-out articles): `held_out` articles drawn with `seed`, in file order.

  Raises:
    ValueError: `held_out` leaves no article for one side.
  """
  if not 0 < held_out < len(dataset):
    raise ValueError(f'held_out={held_out} must leave articles on both sides of '
                     f'{len(dataset)}.')
  chosen = set(np.random.default_rng(seed).choice(len(dataset), held_out, replace=False).tolist())
  return ([a for i, a in enumerate(dataset) if i not in chosen],
          [a for i, a in enumerate(dataset) if i in chosen])


def num_questions(articles: list[dict]) -> int:
  return sum(len(p['qas']) for a in articles for p in a['paragraphs'])


def sentences(context: str) -> list[str]:
  """The context cut after '.', '!' or '?' where a capital, digit or quote follows."""
  return [s for s in _SENTENCE_END.split(context) if s.strip()]


def _words(text: str) -> set[str]:
  return {w for w in re.findall(r'\w+', text.lower()) if w not in _STOP_WORDS}


def first_sentence_answers(articles: list[dict]) -> dict[str, str]:
  """Question id -> the first sentence of its paragraph."""
  return {qa['id']: sentences(p['context'])[0]
          for a in articles for p in a['paragraphs'] for qa in p['qas']}


def best_overlap_answers(articles: list[dict]) -> dict[str, str]:
  """Question id -> its paragraph's sentence sharing the most distinct non-stop words with it.

  Ties go to the earlier sentence.
  """
  answers = {}
  for article in articles:
    for paragraph in article['paragraphs']:
      candidates = sentences(paragraph['context'])
      for qa in paragraph['qas']:
        question = _words(qa['question'])
        overlaps = [len(question & _words(s)) for s in candidates]
        answers[qa['id']] = candidates[int(np.argmax(overlaps))]
  return answers


def score(articles: list[dict], answers: dict[str, str]) -> dict[str, float]:
  """Model Garden's official SQuAD v1.1 scorer, as percentages: exact_match, f1."""
  metrics = squad_evaluate_v1_1.evaluate(articles, answers)
  return dict(exact_match=100 * metrics['exact_match'], f1=100 * metrics['final_f1'])


def write_split(dev_path: str, work_dir: str, held_out: int, seed: int) -> dict[str, str]:
  """Writes `train.json` and `held_out.json` (SQuAD format) under `work_dir`; returns the paths."""
  with open(dev_path, encoding='utf-8') as f:
    dev = json.load(f)
  train, evaluation = split_articles(dev['data'], held_out, seed)
  # Dev questions have several reference answers; training takes one span (SQuAD's train set
  # has one answer per question, and Model Garden's reader requires it): the first.
  train = [dict(article, paragraphs=[
      dict(paragraph, qas=[dict(qa, answers=qa['answers'][:1]) for qa in paragraph['qas']])
      for paragraph in article['paragraphs']]) for article in train]
  paths = {}
  for name, articles in (('train', train), ('held_out', evaluation)):
    paths[name] = os.path.join(work_dir, f'{name}.json')
    atomic_files.write_json(paths[name], dict(version=dev.get('version', '1.1'), data=articles))
  return paths


def write_train_records(train_json: str, vocab_file: str, lower_case: bool, seq_length: int,
                        query_length: int, doc_stride: int, output_path: str) -> int:
  """Model Garden's SQuAD training features of `train_json`; returns how many were written."""
  meta = squad_lib.generate_tf_record_from_json_file(
      train_json, vocab_file, output_path, max_seq_length=seq_length, do_lower_case=lower_case,
      max_query_length=query_length, doc_stride=doc_stride)
  return meta['train_data_size']


def train_command(experiment: str, model_dir: str, config_file: str) -> list[str]:
  return [sys.executable, '-m', 'teams_tf.train', f'--experiment={experiment}',
          '--mode=train_and_eval', f'--model_dir={model_dir}', f'--config_file={config_file}']


_ASK = '''
import json, sys
import tensorflow as tf
import tensorflow_text  # Registers the tokenizer ops.
questions = json.load(open(sys.argv[2]))
answer = tf.saved_model.load(sys.argv[1]).signatures['serving_default']
out = answer(question=tf.constant([q['question'] for q in questions]),
             context=tf.constant([q['context'] for q in questions]))
print(json.dumps([t.decode('utf-8') for t in out['answer_text'].numpy()]))
'''


def ask_export(export_dir: str, questions: Sequence[dict], work_dir: str) -> list[str]:
  """Answers `questions` ({question, context}) with the SavedModel in a new Python process."""
  path = os.path.join(work_dir, 'questions.json')
  atomic_files.write_json(path, list(questions))
  result = subprocess.run([sys.executable, '-c', _ASK, export_dir, path], capture_output=True,
                          text=True, timeout=600, check=True, cwd=work_dir)
  return json.loads(result.stdout.strip().splitlines()[-1])


def sample_questions(articles: list[dict], count: int, seed: int) -> list[dict]:
  """`count` held-out questions with their context and gold answers, drawn with `seed`."""
  pool = [dict(id=qa['id'], question=qa['question'], context=p['context'],
               gold=[a['text'] for a in qa['answers']])
          for a in articles for p in a['paragraphs'] for qa in p['qas']]
  picks = np.random.default_rng(seed).choice(len(pool), count, replace=False)
  return [pool[i] for i in sorted(picks)]


def markdown(result: dict, command: str) -> str:
  """The report of one check: data, the model's and the baselines' EM/F1, served answers."""
  lines = [
      '# SQuAD v1.1 on real text: a functional check, not a benchmark', '',
      f'`{command}`', '',
      f'Training: {result["train_articles"]} of the 48 dev-v1.1 articles '
      f'({result["train_questions"]:,} questions, {result["train_features"]:,} windows of '
      f'{result["seq_length"]} tokens); held out: {result["held_out_articles"]} articles '
      f'({result["held_out_questions"]:,} questions), drawn with seed {result["seed"]}. '
      f'Encoder: {result["encoder"]}; {result["experiment"]}, {result["train_steps"]:,} steps '
      f'({result["epochs"]:g} epochs, batch {result["batch_size"]}, learning rate '
      f'{result["learning_rate"]:g}), '
      + (f'{result["minutes"]:.1f} minutes' if result['minutes'] else 'time not recorded')
      + f' on {result["machine"]}.', '',
      '| answers on the held-out articles | EM | F1 |', '|---|---:|---:|']
  for row in result['rows']:
    lines.append(f'| {row["name"]} | {row["exact_match"]:.1f} | {row["f1"]:.1f} |')
  lines += ['', 'Served from the exported SavedModel (`teams-export --kind=squad`) in a fresh '
            'process:', '', '| question | served answer | gold |', '|---|---|---|']
  for asked in result['served']:
    lines.append(f'| {asked["question"]} | {asked["answer"]} | {" / ".join(asked["gold"])} |')
  return '\n'.join(lines) + '\n'


class CheckSettings(collections.namedtuple('CheckSettings', [
    'dev_json', 'pretraining_dir', 'init_checkpoint', 'size', 'work_dir', 'out_dir', 'name',
    'held_out_articles', 'seed', 'epochs', 'learning_rate'])):
  """One check: the data, the encoder (shape and vocabulary from `pretraining_dir`, weights from
  `init_checkpoint`, '' for random init), where it runs and how it fine-tunes."""


def _config(settings, encoder, vocab_file, lower_case, paths, records, train_steps, registered):
  """The --config_file of the fine-tuning run: data, encoder, steps, rate."""
  data = registered.task.train_data
  windows = dict(seq_length=data.seq_length, query_length=data.query_length,
                 doc_stride=data.doc_stride)
  interval = max(1, train_steps // 4)
  return {
      'task': {
          'init_checkpoint': settings.init_checkpoint,
          'model': {'encoder': encoder.as_dict()},
          'train_data': dict(input_path=records, **windows),
          'validation_data': dict(input_path=paths['held_out'], vocab_file=vocab_file,
                                  do_lower_case=lower_case, **windows),
      },
      'trainer': {
          'train_steps': train_steps, 'steps_per_loop': interval,
          'summary_interval': interval, 'checkpoint_interval': interval,
          'validation_interval': train_steps,
          'optimizer_config': {'learning_rate': {'polynomial': {
              'initial_learning_rate': settings.learning_rate}}},
      },
  }


def _training_minutes(model_dir: str) -> Optional[float]:
  """Minutes the fine-tuning command took, as recorded when it ended (None before)."""
  path = os.path.join(model_dir, 'minutes')
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return float(f.read())


def run_check(settings: CheckSettings, command: str,
              log: Callable[[str], None] = print) -> Optional[dict]:
  """Runs (or resumes) one check and writes `<out_dir>/<name>.{json,md}`.

  Returns:
    The result, or None when fine-tuning failed (its log is named).
  """
  work_dir = os.path.join(settings.work_dir, settings.name)
  os.makedirs(work_dir, exist_ok=True)
  paths = write_split(settings.dev_json, work_dir, settings.held_out_articles, settings.seed)
  with open(paths['train'], encoding='utf-8') as f:
    train = json.load(f)['data']
  with open(paths['held_out'], encoding='utf-8') as f:
    held_out = json.load(f)['data']
  pretraining = run_settings.RunSettings(settings.pretraining_dir)
  # Model Garden's SQuAD tokenizer reads a file path, not the `sample:` names.
  vocab_file = embedded.resolve_path(
      pretraining.get('vocab_file', None, 'task.train_data.vocab_file'))
  lower_case = pretraining.get('lower_case', None, 'task.train_data.lower_case')
  encoder = run_settings.kept_encoder_config(
      pretraining.params['task']['model'], os.path.join(settings.pretraining_dir, 'params.yaml'),
      checkpoint_paths.resolve_prefix(settings.pretraining_dir))
  experiment = f'squad_v1_{settings.size}'
  registered = exp_factory.get_exp_config(experiment)
  fine_tuning = registered.task.model.encoder.get()
  encoder.get().dropout_rate = fine_tuning.dropout_rate  # Table 6: 0.1.
  encoder.get().attention_dropout_rate = fine_tuning.attention_dropout_rate
  data = registered.task.train_data
  records = os.path.join(work_dir, 'train.tfrecord')
  features_path = records + '.features'
  if not os.path.exists(features_path):
    log(f'{settings.name}: converting {num_questions(train):,} training questions to windows of '
        f'{data.seq_length} tokens')
    atomic_files.write_text(features_path, str(write_train_records(
        paths['train'], vocab_file, lower_case, data.seq_length, data.query_length,
        data.doc_stride, records)))
  with open(features_path) as f:
    num_features = int(f.read())
  batch_size = data.global_batch_size
  train_steps = max(1, round(settings.epochs * num_features / batch_size))
  config_path = os.path.join(work_dir, 'config.yaml')
  atomic_files.write_json(config_path, _config(settings, encoder, vocab_file, lower_case, paths,
                                                records, train_steps, registered))
  model_dir = os.path.join(work_dir, 'model')
  validation = run_summary.read_scalars(os.path.join(model_dir, 'validation'))
  minutes = _training_minutes(model_dir)
  if train_steps not in validation:  # Else a finished run, evaluated: only the rest is redone.
    log(f'{settings.name}: fine-tuning {experiment} for {train_steps:,} steps into {model_dir} '
        f'(log {model_dir}.log)')
    start = time.monotonic()
    with open(f'{model_dir}.log', 'a') as out:
      status = subprocess.run(train_command(experiment, model_dir, config_path), stdout=out,
                              stderr=subprocess.STDOUT, check=False).returncode
    minutes = (time.monotonic() - start) / 60
    validation = run_summary.read_scalars(os.path.join(model_dir, 'validation'))
    if status or train_steps not in validation:
      log(f'{settings.name}: teams_tf.train exited with {status}; see {model_dir}.log')
      return None
    atomic_files.write_text(os.path.join(model_dir, 'minutes'), f'{minutes:.2f}')
  metrics = validation[train_steps]
  export_dir = os.path.join(work_dir, 'export')
  subprocess.run([sys.executable, '-m', 'teams_tf.cli.export_savedmodel', '--kind=squad',
                  f'--model_dir={model_dir}', f'--export_dir={export_dir}'],
                 capture_output=True, text=True, check=True)
  asked = sample_questions(held_out, 5, settings.seed)
  served = ask_export(export_dir, asked, work_dir)
  result = dict(
      name=settings.name, experiment=experiment, seed=settings.seed,
      encoder=(f'{settings.init_checkpoint}' if settings.init_checkpoint else
               f'random init of {settings.pretraining_dir}\'s shape'),
      train_articles=len(train), train_questions=num_questions(train),
      train_features=num_features, held_out_articles=len(held_out),
      held_out_questions=num_questions(held_out), seq_length=data.seq_length,
      train_steps=train_steps, epochs=settings.epochs, batch_size=batch_size,
      learning_rate=settings.learning_rate, minutes=minutes and round(minutes, 1),
      machine=hardware.description(),
      rows=[dict(name=f'fine-tuned {settings.size} encoder ({settings.name})',
                 exact_match=100 * metrics['exact_match'], f1=100 * metrics['final_f1']),
            dict(name='first sentence of the paragraph',
                 **score(held_out, first_sentence_answers(held_out))),
            dict(name='sentence with the most question words',
                 **score(held_out, best_overlap_answers(held_out)))],
      served=[dict(question=q['question'], answer=a, gold=q['gold'])
              for q, a in zip(asked, served)])
  os.makedirs(settings.out_dir, exist_ok=True)
  atomic_files.write_json(os.path.join(settings.out_dir, f'{settings.name}.json'), result)
  atomic_files.write_text(os.path.join(settings.out_dir, f'{settings.name}.md'),
                          markdown(result, command))
  return result
