"""GLUE and SQuAD fine-tuning experiments over this project's pretrained encoders.

Every pretraining objective here keeps a BERT-architecture encoder whose checkpoint entry
`encoder` restores into Model Garden's `BertEncoderV2`, so fine-tuning is Model Garden's own
`SentencePredictionTask` (with its regression loss fixed: `tasks/sentence_prediction_task.py`) /
`QuestionAnsweringTask` with `encoder.type: bert_v2`. COCO-LM's main
Transformer adds T5 relative positions; its `*_rel_pos` experiments build it with Model Garden's
`any` encoder type (`shared_encoders.build_relative_position_encoder`):

  python -m teams_tf.train --experiment=glue_sst2_small --mode=train_and_eval \
      --model_dir=/tmp/sst2 --params_override=task.init_checkpoint=/tmp/teams_small,...

Hyper-parameters are the TEAMS paper's Table 6 (Appendix C): AdamW with ε 1e-6, β 0.9/0.999, linear
decay after a warm-up over the first 10% of steps, dropout 0.1; GLUE: batch 32, 5 epochs, learning
rate 1e-4 (small) / 3e-5 (base, large); SQuAD: learning rate 8e-5 / 5e-5 / 3e-5, batch 48 / 32 / 48
and 5 / 2 / 2 epochs for small / base / large. `*_demo` experiments fine-tune the `*_demo` runs'
encoder (pre-LN, relative positions, 64 positions, embedded sample vocabulary) with the small-size
settings; `glue_*_mini` the `*_mini` runs'.
"""

import dataclasses

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.nlp.configs import encoders
from official.nlp.data import question_answering_dataloader
from official.nlp.data import sentence_prediction_dataloader
from official.nlp.tasks import question_answering
from official.nlp.tasks import sentence_prediction

from teams_tf.configs import encoders as encoder_sizes
from teams_tf.configs import optimization
from teams_tf.registry import experiments
from teams_tf.tasks import sentence_prediction_task


@dataclasses.dataclass(frozen=True)
class GlueTask:
  """A GLUE task: label count (1 = regression), Model Garden metric, train set size."""
  num_classes: int
  metric_type: str
  num_train_examples: int


# Train sizes of the GLUE train splits (Wang et al., 2019); they set the default step counts.
GLUE_TASKS = {
    'cola': GlueTask(2, 'matthews_corrcoef', 8_551),
    'sst2': GlueTask(2, 'accuracy', 67_349),
    'mrpc': GlueTask(2, 'accuracy', 3_668),
    'qqp': GlueTask(2, 'accuracy', 363_846),
    'mnli': GlueTask(3, 'accuracy', 392_702),
    'qnli': GlueTask(2, 'accuracy', 104_743),
    'rte': GlueTask(2, 'accuracy', 2_490),
    'stsb': GlueTask(1, 'pearson_spearman_corr', 5_749),
}
# SQuAD train sets: v1.1 87,599 questions; v2.0 130,319 (Rajpurkar et al., 2016, 2018).
SQUAD_TRAIN_EXAMPLES = {'v1': 87_599, 'v2': 130_319}

# size: (GLUE lr, SQuAD lr, SQuAD batch, SQuAD epochs), TEAMS Table 6; demo uses small's values.
_TABLE6 = {
    'demo': (1e-4, 8e-5, 48, 5),
    'small': (1e-4, 8e-5, 48, 5),
    'base': (3e-5, 5e-5, 32, 2),
    'large': (3e-5, 3e-5, 48, 2),
}
_GLUE_BATCH_SIZE = 32
_GLUE_EPOCHS = 5
# Mini (not from a paper): (GLUE lr, epochs) for fine-tuning the `*_mini` runs' encoder on 2 CPU
# cores, as measured by the replication (benchmarks/replication/replication.md, 3 epochs, seed 1 at
# 1e-4, 3e-4, 1e-3 and 3e-3): 1e-3 scored best on SST-2 for ELECTRA (74.3; 63.3 at 3e-4, 67.7 at
# 3e-3) and TEAMS (77.8; 74.8, 72.4), tied BERT's best (77.1) and beat 3e-3 on SST-2 and STS-B
# for BERT and TEAMS. GLUE only: 64 positions are too few for SQuAD's windows.
_MINI_GLUE = (1e-3, 3)
_WARMUP_FRACTION = 0.1
_BERT_VOCAB_SIZE = 30522


def _encoder(size, relative_positions=False):
  """The kept encoder: the paper sizes with BERT's vocabulary, demo and mini the runs' own.

  `bert_v2` (every objective's kept encoder), or with `relative_positions` COCO-LM's main
  Transformer (BERT plus T5 relative positions with the authors' 32 buckets up to 128), built
  through Model Garden's `any` encoder type. Demo and mini are always the latter (pre-LN with
  its final LayerNorm, relative positions at their recipe's scale), with Table 6's fine-tuning
  dropout.
  """
  if size in experiments.LOW_BUDGET_SIZES:
    config = experiments.low_budget_encoder_config(size)
    config.dropout_rate = config.attention_dropout_rate = 0.1  # Table 6.
    return encoders.EncoderConfig(
        type='any', any=encoder_sizes.RelativePositionEncoderConfig(
            **config.as_dict(),
            relative_position_bias_scale=experiments.relative_position_bias_scale(size)))
  config = encoder_sizes.encoder_config(size, vocab_size=_BERT_VOCAB_SIZE)
  if relative_positions:
    return encoders.EncoderConfig(
        type='any', any=encoder_sizes.RelativePositionEncoderConfig(**config.as_dict()))
  return encoders.EncoderConfig(type='bert_v2', bert_v2=config)


def _trainer(learning_rate, train_steps):
  return cfg.TrainerConfig(
      train_steps=train_steps,
      optimizer_config=optimization.adamw_linear_decay(
          learning_rate, train_steps, int(_WARMUP_FRACTION * train_steps)),
      steps_per_loop=min(1000, train_steps), summary_interval=min(1000, train_steps),
      checkpoint_interval=min(1000, train_steps), validation_interval=min(1000, train_steps),
      validation_steps=-1, max_to_keep=2)


def glue_experiment(task_name, size, relative_positions=False):
  """`glue_<task>_<size>[_rel_pos]`: Model Garden sentence prediction on TFRecords from
  `official.nlp.data.create_finetuning_data` (see docs/finetuning.md)."""
  task = GLUE_TASKS[task_name]
  learning_rate, epochs = _MINI_GLUE if size == 'mini' else (_TABLE6[size][0], _GLUE_EPOCHS)
  encoder = _encoder(size, relative_positions)
  # The low-budget encoders have as many positions as their pretraining sequences.
  seq_length = min(128, encoder.get().max_position_embeddings)
  train_steps = round(task.num_train_examples * epochs) // _GLUE_BATCH_SIZE
  label_type = 'float' if task.num_classes == 1 else 'int'
  return cfg.ExperimentConfig(
      task=sentence_prediction_task.SentencePredictionConfig(
          model=sentence_prediction.ModelConfig(
              encoder=encoder, num_classes=task.num_classes),
          metric_type=task.metric_type,
          train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(
              global_batch_size=_GLUE_BATCH_SIZE, seq_length=seq_length, is_training=True,
              label_type=label_type),
          validation_data=sentence_prediction_dataloader.SentencePredictionDataConfig(
              global_batch_size=_GLUE_BATCH_SIZE, seq_length=seq_length, is_training=False,
              drop_remainder=False, label_type=label_type)),
      trainer=_trainer(learning_rate, train_steps),
      restrictions=['task.train_data.is_training != None',
                    'task.validation_data.is_training != None'])


def squad_experiment(version, size, relative_positions=False):
  """`squad_<v1|v2>_<size>[_rel_pos]`: Model Garden question answering, scored with the official
  SQuAD v1.1 / v2.0 EM and F1 scripts on `task.validation_data.input_path` (the dev JSON)."""
  learning_rate, batch_size, epochs = _TABLE6[size][1:]
  encoder = _encoder(size, relative_positions)
  seq_length = min(384, encoder.get().max_position_embeddings)
  train_steps = SQUAD_TRAIN_EXAMPLES[version] * epochs // batch_size
  with_negative = version == 'v2'
  return cfg.ExperimentConfig(
      task=question_answering.QuestionAnsweringConfig(
          model=question_answering.ModelConfig(encoder=encoder),
          train_data=question_answering_dataloader.QADataConfig(
              global_batch_size=batch_size, seq_length=seq_length, is_training=True,
              version_2_with_negative=with_negative),
          validation_data=question_answering_dataloader.QADataConfig(
              global_batch_size=batch_size, seq_length=seq_length, is_training=False,
              drop_remainder=False, version_2_with_negative=with_negative,
              doc_stride=seq_length // 3, query_length=seq_length // 6)),
      trainer=_trainer(learning_rate, train_steps),
      restrictions=['task.train_data.is_training != None',
                    'task.validation_data.is_training != None'])


def _register(name, description, factory, *args):
  def registered():
    return factory(*args)

  registered.__doc__ = description
  exp_factory.register_config_factory(name)(registered)


# Encoder kinds: (name suffix, relative positions, description).
_ENCODERS = (('', False, 'bert_v2 encoder'),
             ('_rel_pos', True, 'relative-position (COCO-LM) encoder'))
for _size in _TABLE6:
  _lr, _squad_lr, _squad_batch, _squad_epochs = _TABLE6[_size]
  # Demo and mini fine-tune their runs' own encoder: one kind, no `_rel_pos` twin.
  for _suffix, _relative, _kind in (
      _ENCODERS if _size not in experiments.LOW_BUDGET_SIZES
      else (('', False, "run's pre-LN, relative-position encoder"),)):
    for _task_name, _task in GLUE_TASKS.items():
      _register(f'glue_{_task_name}_{_size}{_suffix}',
                f'GLUE {_task_name.upper()} fine-tuning of a {_size} {_kind} '
                f'({_task.metric_type}); Table 6: lr {_lr:g}, batch {_GLUE_BATCH_SIZE}, '
                f'{_GLUE_EPOCHS} epochs',
                glue_experiment, _task_name, _size, _relative)
    for _version in SQUAD_TRAIN_EXAMPLES:
      _register(f'squad_{_version}_{_size}{_suffix}',
                f'SQuAD {"v1.1" if _version == "v1" else "v2.0"} fine-tuning of a {_size} '
                f'{_kind} (official EM/F1); Table 6: lr {_squad_lr:g}, batch {_squad_batch}, '
                f'{_squad_epochs} epochs',
                squad_experiment, _version, _size, _relative)
for _task_name, _task in GLUE_TASKS.items():
  _register(f'glue_{_task_name}_mini',
            f'GLUE {_task_name.upper()} fine-tuning of a `*_mini` run\'s pre-LN, relative-position '
            f'encoder ({_task.metric_type}); lr {_MINI_GLUE[0]:g}, batch {_GLUE_BATCH_SIZE}, '
            f'{_MINI_GLUE[1]:g} epochs', glue_experiment, _task_name, 'mini')
