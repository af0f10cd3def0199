"""Hugging Face's BERT pretraining at a teams_tf recipe: `BertForMaskedLM` under `Trainer`.

The PyTorch peer of the time-to-accuracy benchmark, run as its own process (no TensorFlow):

  python -m teams_lab.hugging_face_mlm train <run_dir>     # trains, resuming its checkpoints
  python -m teams_lab.hugging_face_mlm predict <run_dir> <checkpoint_dir> <out.npz>

Both read `<run_dir>/settings.json` (`time_to_accuracy.Settings`: the recipe's shape,
optimisation and masking, the token arrays and the evaluation set). Hugging Face's defaults
stand where the recipe names nothing (initialisation, torch's fused AdamW, logging); what it
cannot match is listed with it in `time_to_accuracy.IMPLEMENTATIONS`.
"""

import json
import os
import sys

import numpy as np
import torch
import transformers
from transformers import trainer_utils


def bert_config(encoder: dict) -> transformers.BertConfig:
  """`BertConfig` of a Model Garden `BertEncoderConfig` dict (no factorised embedding).

  Raises:
    ValueError: an encoder Hugging Face's BERT cannot express.
  """
  if encoder.get('embedding_size') not in (None, encoder['hidden_size']):
    raise ValueError(f'embedding_size={encoder["embedding_size"]} differs from hidden_size='
                     f'{encoder["hidden_size"]}: Hugging Face BERT has no factorised embedding.')
  return transformers.BertConfig(
      vocab_size=encoder['vocab_size'], hidden_size=encoder['hidden_size'],
      num_hidden_layers=encoder['num_layers'],
      num_attention_heads=encoder['num_attention_heads'],
      intermediate_size=encoder['intermediate_size'], hidden_act=encoder['hidden_activation'],
      hidden_dropout_prob=encoder['dropout_rate'],
      attention_probs_dropout_prob=encoder['attention_dropout_rate'],
      max_position_embeddings=encoder['max_position_embeddings'],
      type_vocab_size=encoder['type_vocab_size'], initializer_range=encoder['initializer_range'],
      tie_word_embeddings=True)


class _TokenArrays(torch.utils.data.Dataset):
  """The training sequences of `time_to_accuracy_data.token_arrays`, one dict per sequence."""

  def __init__(self, path):
    with np.load(path) as arrays:
      self._arrays = {name: torch.from_numpy(arrays[name].astype(np.int64)) for name in arrays}

  def __len__(self):
    return len(self._arrays['input_ids'])

  def __getitem__(self, index):
    return {name: values[index] for name, values in self._arrays.items()}


def _read_settings(run_dir):
  with open(os.path.join(run_dir, 'settings.json')) as f:
    return json.load(f)


def train(run_dir: str) -> None:
  """Trains `BertForMaskedLM` to `train_steps`, saving every `checkpoint_interval` steps.

  Checkpoints (`<run_dir>/model/checkpoint-<step>/`, with the optimizer) are kept, and a run
  resumes from its last one. TensorBoard summaries go to `<run_dir>/model/runs`.
  """
  settings = _read_settings(run_dir)
  model_dir = settings['model_dir']
  torch.manual_seed(settings['seed'])
  tokenizer = transformers.BertTokenizerFast(vocab_file=settings['vocab_file'],
                                             do_lower_case=True)
  collator = transformers.DataCollatorForLanguageModeling(
      tokenizer, mlm_probability=settings['mask_rate'],
      mask_replace_prob=settings['mask_token_rate'],
      random_replace_prob=settings['random_token_rate'])
  optimizer = settings['optimizer']
  arguments = transformers.TrainingArguments(
      output_dir=model_dir, max_steps=settings['train_steps'],
      per_device_train_batch_size=settings['batch_size'],
      learning_rate=optimizer['learning_rate'], warmup_steps=optimizer['warmup_steps'],
      lr_scheduler_type='linear', weight_decay=optimizer['weight_decay'],
      adam_beta1=optimizer['beta_1'], adam_beta2=optimizer['beta_2'],
      adam_epsilon=optimizer['epsilon'], max_grad_norm=optimizer['clip_norm'],
      save_strategy='steps', save_steps=settings['checkpoint_interval'],
      logging_steps=settings['summary_interval'], report_to=['tensorboard'],
      seed=settings['seed'], use_cpu=True, dataloader_num_workers=0)
  model = transformers.BertForMaskedLM(bert_config(settings['encoder']))
  trainer = transformers.Trainer(model=model, args=arguments, data_collator=collator,
                                 train_dataset=_TokenArrays(settings['train_input']))
  last = trainer_utils.get_last_checkpoint(model_dir) if os.path.isdir(model_dir) else None
  print(f'training BertForMaskedLM ({sum(p.numel() for p in model.parameters()):,} parameters) '
        f'to step {settings["train_steps"]:,} in {model_dir}'
        + (f', resuming {last}' if last else ''), flush=True)
  trainer.train(resume_from_checkpoint=last)


def predict(run_dir: str, checkpoint_dir: str, out_path: str, batch_size: int = 256) -> None:
  """Writes the argmax MLM prediction at every masked slot of the evaluation set.

  `out_path` gets `predicted_ids`: int32 [N, P], the id of the largest logit at each
  `masked_lm_positions` slot (padding slots included; their weight is 0).
  """
  settings = _read_settings(run_dir)
  model = transformers.BertForMaskedLM.from_pretrained(checkpoint_dir).eval()
  with np.load(settings['evaluation_set']) as arrays:
    inputs = {name: torch.from_numpy(arrays[name].astype(np.int64))
              for name in ('input_word_ids', 'input_mask', 'input_type_ids',
                           'masked_lm_positions')}
  predicted = []
  with torch.no_grad():
    for start in range(0, len(inputs['input_word_ids']), batch_size):
      batch = {name: values[start:start + batch_size] for name, values in inputs.items()}
      logits = model(input_ids=batch['input_word_ids'], attention_mask=batch['input_mask'],
                     token_type_ids=batch['input_type_ids']).logits  # [B, T, V]
      positions = batch['masked_lm_positions'][:, :, None].expand(-1, -1, logits.shape[-1])
      predicted.append(torch.gather(logits, 1, positions).argmax(-1))  # [B, P]
  np.savez(out_path, predicted_ids=torch.cat(predicted).numpy().astype(np.int32))


def main(argv):
  commands = {'train': (train, 1), 'predict': (predict, 3)}
  if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
    sys.exit(f'usage: {argv[0]} train <run_dir> | predict <run_dir> <checkpoint_dir> <out.npz>')
  command, _ = commands[argv[1]]
  command(*argv[2:])


if __name__ == '__main__':
  main(sys.argv)
