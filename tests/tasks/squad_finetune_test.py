"""SQuAD fine-tuning through Model Garden's QA task from a TEAMS pretraining checkpoint."""

import json
import os

import numpy as np
import tensorflow as tf

from official.core import exp_factory
from official.core import task_factory
from official.modeling import optimization
from official.nlp.data import squad_lib
from official.nlp.tools import squad_evaluate_v1_1
from official.nlp.tools import squad_evaluate_v2_0

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.data import embedded
from teams_tf.models import teams_pretrainer
from tests import testing_utils

_CONTEXTS = [
    ('The cat sat on the mat in the kitchen. It was a sunny day in May.',
     [('Where did the cat sit?', 'on the mat'), ('When was it sunny?', 'in May')]),
    ('Paris is the capital of France. The river Seine flows through the city.',
     [('What is the capital of France?', 'Paris'), ('Which river flows through Paris?',
                                                    'Seine')]),
]


def _squad_json(path):
  paragraphs = []
  for i, (context, qas) in enumerate(_CONTEXTS):
    paragraphs.append(dict(context=context, qas=[
        dict(id=f'q{i}{j}', question=q,
             answers=[dict(text=a, answer_start=context.index(a))]) for j, (q, a) in enumerate(qas)
    ]))
  with open(path, 'w') as f:
    json.dump(dict(version='1.1', data=[dict(title='t', paragraphs=paragraphs)]), f)


class SquadFinetuneTest(tf.test.TestCase):

  def test_init_from_pretraining_checkpoint_train_and_evaluate(self):
    directory = self.get_temp_dir()
    vocab_file = embedded.resolve_path('sample:vocab')
    params = exp_factory.get_exp_config('squad_v1_demo')
    # Pretraining checkpoint of the demo-size TEAMS model (same encoder as squad_v1_demo).
    pretrain = exp_factory.get_exp_config('teams_demo')
    pretrainer = teams_pretrainer.build_teams_pretrainer(pretrain.task.model, seed=1)
    batch = next(iter(task_factory.get_task(pretrain.task).build_inputs(
        pretrain.task.validation_data)))
    pretrainer(batch)
    checkpoint = tf.train.Checkpoint(model=pretrainer, **pretrainer.checkpoint_items).save(
        os.path.join(directory, 'pretrain', 'ckpt'))

    squad_file = os.path.join(directory, 'squad.json')
    _squad_json(squad_file)
    train_records = os.path.join(directory, 'train.tfrecord')
    squad_lib.generate_tf_record_from_json_file(
        squad_file, vocab_file, train_records, max_seq_length=64, do_lower_case=True,
        max_query_length=16, doc_stride=32)
    params.task.init_checkpoint = checkpoint
    for data in (params.task.train_data, params.task.validation_data):
      data.seq_length = 64
      data.global_batch_size = 4
      data.vocab_file = vocab_file
      data.query_length = 16
      data.doc_stride = 32
    params.task.train_data.input_path = train_records
    params.task.validation_data.input_path = squad_file

    task = task_factory.get_task(params.task, logging_dir=directory)
    model = task.build_model()
    task.initialize(model)
    restored = model.checkpoint_items['encoder'].get_embedding_table().numpy()
    self.assertAllEqual(
        pretrainer.discriminator_network.get_embedding_table().numpy(), restored)

    optimizer = optimization.OptimizerFactory(optimization.OptimizationConfig({
        'optimizer': {'type': 'adam'},
        'learning_rate': {'type': 'constant', 'constant': {'learning_rate': 3e-3}},
    })).build_optimizer(3e-3)
    train_batch = next(iter(task.build_inputs(params.task.train_data)))
    testing_utils.build_step_variables(model, optimizer)
    step = tf.function(lambda: task.train_step(train_batch, model, optimizer))
    losses = [float(step()['loss']) for _ in range(15)]
    self.assertLess(np.mean(losses[-3:]), 0.7 * losses[0])

    logs = None
    for eval_batch in task.build_inputs(params.task.validation_data):
      outputs = task.validation_step(eval_batch, model)
      # Model Garden's evaluator hands aggregate_logs one value per replica.
      logs = task.aggregate_logs(logs, {k: (v,) for k, v in outputs.items()})
    scores = task.reduce_aggregated_logs(logs)
    # Model Garden's v1.1 scorer reports fractions in [0, 1] (v2.0 reports percentages).
    for key in ('exact_match', 'final_f1'):
      self.assertBetween(float(scores[key]), 0.0, 1.0)

  def test_official_scores_v1_and_v2_semantics(self):
    dataset = [dict(paragraphs=[dict(context='In Tokyo in May.', qas=[
        dict(id='a', question='Where?', answers=[dict(text='Tokyo', answer_start=3)]),
        dict(id='b', question='When?', answers=[dict(text='in May', answer_start=9)]),
        dict(id='c', question='Who?', answers=[], is_impossible=True),
    ])])]
    v1 = squad_evaluate_v1_1.evaluate(
        [dict(paragraphs=[dict(qas=dataset[0]['paragraphs'][0]['qas'][:2])])],
        {'a': 'Tokyo', 'b': 'May'})
    # a: exact; b: 'May' vs 'in May' -> EM 0, F1 = 2 * (1 * 0.5) / 1.5 = 2/3 ('in' not an article).
    # The v1.1 scorer returns fractions, the v2.0 scorer percentages.
    self.assertAllClose(0.5, v1['exact_match'])
    self.assertAllClose((1 + 2 / 3) / 2, v1['final_f1'])
    v2 = squad_evaluate_v2_0.evaluate(dataset, {'a': 'Tokyo', 'b': 'in May', 'c': ''})
    self.assertAllClose(100.0, v2['final_exact'])  # The empty answer is right for 'c'.


if __name__ == '__main__':
  tf.test.main()
