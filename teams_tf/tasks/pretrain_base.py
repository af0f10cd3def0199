"""Plumbing shared by every pretraining Task: inputs and config checks.

Each objective's Task subclasses `PretrainTask` and adds only build_model, build_losses,
build_metrics and process_metrics. Training and validation steps are Model Garden's
`base_task.Task` ones (replica loss scaling, LossScaleOptimizer handling).
"""

from official.core import base_task

from teams_tf.data import embedded
from teams_tf.data import pretrain_dataloader
from teams_tf.data import tokenization


class PretrainTask(base_task.Task):
  """Base for pretraining tasks whose model config has an `encoder` (BertEncoderConfig)."""

  def __init__(self, params, logging_dir=None, name=None):
    super().__init__(params, logging_dir=logging_dir, name=name)
    self._check_data_fits_encoder()

  def _check_data_fits_encoder(self):
    """Fails early, naming the fields, when data and encoder disagree on sizes."""
    encoder = self.task_config.model.encoder
    encoder_vocab_size = encoder.vocab_size
    for field in ('train_data', 'validation_data'):
      data = getattr(self.task_config, field)
      if not data.input_path:
        continue
      if data.seq_length > encoder.max_position_embeddings:
        raise ValueError(
            f'task.{field}.seq_length={data.seq_length} exceeds '
            f'task.model.encoder.max_position_embeddings={encoder.max_position_embeddings}; '
            'shorten the sequences or enlarge the position table.')
      vocab = tokenization.load_vocabulary(embedded.resolve_path(data.vocab_file))
      if vocab.size != encoder_vocab_size:
        raise ValueError(
            f'task.model.encoder.vocab_size={encoder_vocab_size} but task.{field}.vocab_file '
            f'{data.vocab_file!r} has {vocab.size} tokens; set '
            f'--params_override=task.model.encoder.vocab_size={vocab.size} (or use the '
            'vocabulary the model was built for).')

  def build_inputs(self, params, input_context=None):
    """Masked pretraining batches; see `pretrain_dataloader.PretrainDataLoader` for the spec."""
    return pretrain_dataloader.PretrainDataLoader(params).load(input_context)
