"""Fine-tuned low-budget (`*_demo`, `*_mini`) GLUE and SQuAD runs export and serve raw text.

These encoders are pre-LN with a relative position bias, so their fine-tuning runs save a Model
Garden `any` encoder in params.yaml, which the exporter must read back. Each run here is built from
the registered experiments (`teams_demo`, `glue_sst2_demo`, `squad_v1_demo`) as train.py would
leave it, then served in a fresh process and compared with the Keras model. Demo only: mini builds
its encoder from the same config kind (`recipes.low_budget_encoder_config`), wider.
"""

import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from official.core import exp_factory
from official.core import task_factory
from official.core import train_utils

from teams_tf import registry_imports  # pylint: disable=unused-import
from teams_tf.serving import export_savedmodel
from tests import testing_utils
from tests.serving import export_testing_utils as utils

_SIZE = 'demo'
_QUESTIONS = ['Where is Tokyo?', 'Who wrote it?', 'Ça va?', 'What?']
_CONTEXTS = ['Tokyo is the capital of Japan.', utils.LONG_TEXT, 'Ça va? 東京 — naïve', '']

_SERVE = '''
for name, run in inputs['runs'].items():
  model = tf.saved_model.load(run['path'])
  served = model.signatures['serving_default'](
      **{field: tf.constant(texts) for field, texts in run['texts'].items()})
  outputs[name] = {key: to_py(value) for key, value in served.items()}
'''


def _write_pretraining_run(size, model_dir):
  """`teams_<size>`'s pretrainer, checkpointed with the experiment's params.yaml (as train.py)."""
  config = exp_factory.get_exp_config(f'teams_{size}')
  model = task_factory.get_task(config.task).build_model()
  model(testing_utils.pretraining_batch(vocab_size=utils.VOCAB.size))
  tf.train.Checkpoint(model=model, **model.checkpoint_items).save(os.path.join(model_dir, 'ckpt'))
  train_utils.serialize_config(config, model_dir)


def _fine_tune(experiment, pretrain_dir, model_dir, batch):
  config = exp_factory.get_exp_config(experiment)
  config.task.init_checkpoint = pretrain_dir
  config.task.validation_data = None  # SQuAD would read its dev JSON when the task is built.
  return utils.fine_tune(task_factory.get_task(config.task), model_dir, batch)


class LowBudgetExportTest(tf.test.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.work_dir = tempfile.mkdtemp()
    pretrain_dir = os.path.join(cls.work_dir, 'pretrain')
    _write_pretraining_run(_SIZE, pretrain_dir)

    seq_length = exp_factory.get_exp_config(f'glue_sst2_{_SIZE}').task.train_data.seq_length
    ids = {k: tf.constant(v) for k, v in utils.stack(
        [utils.pack([t], seq_length, 'round_robin') for t in utils.tokenize(utils.TEXTS)]).items()}
    classifier = _fine_tune(f'glue_sst2_{_SIZE}', pretrain_dir, os.path.join(cls.work_dir, 'sst2'),
                            dict(ids, label_ids=np.array([0, 1, 1, 0])))
    cls.expected = {'sst2': classifier(ids, training=False).numpy()}

    query_length = exp_factory.get_exp_config(
        f'squad_v1_{_SIZE}').task.validation_data.query_length
    questions = [q[:query_length] for q in utils.tokenize(_QUESTIONS)]
    squad_ids = utils.stack([utils.pack([q, c], seq_length, 'waterfall')
                             for q, c in zip(questions, utils.tokenize(_CONTEXTS))])
    span_labeler = _fine_tune(
        f'squad_v1_{_SIZE}', pretrain_dir, os.path.join(cls.work_dir, 'squad'),
        dict(squad_ids, start_positions=np.array([20, 30, 26, 0]),
             end_positions=np.array([21, 33, 27, 0])))
    cls.expected['squad'] = [
        x.numpy() for x in span_labeler({k: tf.constant(v) for k, v in squad_ids.items()},
                                        training=False)]

    runs = dict(sst2=dict(texts=dict(sentence=utils.TEXTS)),
                squad=dict(texts=dict(question=_QUESTIONS, context=_CONTEXTS)))
    for kind, run in runs.items():
      run['path'] = os.path.join(cls.work_dir, 'export', kind)
      export_savedmodel.export_from_model_dir(
          'classifier' if kind == 'sst2' else 'squad', os.path.join(cls.work_dir, kind),
          run['path'], **(dict(text_fields=['sentence']) if kind == 'sst2' else {}))
    cls.served = utils.run_in_fresh_process(_SERVE, dict(runs=runs), cls.work_dir)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.work_dir)
    super().tearDownClass()

  def test_glue_run_serves_raw_text_like_the_keras_model(self):
    logits = self.expected['sst2']
    self.assertGreater(np.abs(logits).max(), 1e-3)  # Not a vacuous comparison.
    served = self.served['sst2']
    self.assertAllClose(logits, served['logits'], atol=1e-5, rtol=0)
    self.assertAllEqual(logits.argmax(-1), served['label'])

  def test_squad_run_serves_raw_text_like_the_keras_model(self):
    start_logits, end_logits = self.expected['squad']
    served = self.served['squad']
    self.assertAllClose(start_logits, served['start_logits'], atol=1e-5, rtol=0)
    self.assertAllClose(end_logits, served['end_logits'], atol=1e-5, rtol=0)
    for b, context in enumerate(_CONTEXTS):
      start, end = served['answer_start'][b], served['answer_end'][b]
      self.assertEqual(context[start:end], served['answer_text'][b], msg=b)
      self.assertEqual(bool(context), bool(served['answer_text'][b]), msg=b)

  def test_served_models_import_nothing_from_the_project(self):
    self.assertEqual([], self.served['imported_project_modules'])


if __name__ == '__main__':
  tf.test.main()
