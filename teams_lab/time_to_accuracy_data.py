"""The time-to-accuracy benchmark's data: one evaluation set, and each implementation's input.

Every implementation trains on the learning benchmark's unmasked records (`learning_data`:
wiki_00-48 in the corpus vocabulary) and is scored on one evaluation set: every held-out
sequence (wiki_49) masked once by teams_tf's own validation pipeline at the recipe's evaluation
rate (15%, BERT's 80/10/10), so that all of them predict the same tokens in the same contexts.
teams_tf masks its records as it reads them; Model Garden's BERT loader reads static masks, so
its input is the records masked anew for each epoch it reaches (`masked_epochs`), as dynamic
masking would; Hugging Face's is the records as NumPy arrays (`token_arrays`), which its
collator masks. Each file is written once, under a name that says what it holds, and a
partial one is never taken for a whole one.
"""

import math
import os

import numpy as np
import tensorflow as tf

from teams_tf.data import pretrain_dataloader
from teams_tf.preprocessing import record_format
from teams_tf.utils import atomic_files

# The evaluation set's arrays: the model inputs and the masked tokens to predict.
EVALUATION_FEATURES = ('input_word_ids', 'input_mask', 'input_type_ids', 'masked_lm_positions',
                       'masked_lm_ids', 'masked_lm_weights')
# Model Garden's BERT pretraining record features, in the order `record_format.serialize` keeps.
_RECORD_FEATURES = {'input_ids': 'input_word_ids', 'input_mask': 'input_mask',
                    'segment_ids': 'input_type_ids', 'masked_lm_positions': 'masked_lm_positions',
                    'masked_lm_ids': 'masked_lm_ids', 'masked_lm_weights': 'masked_lm_weights'}
_SHARDS_PER_EPOCH = 8


def _write_arrays(path: str, arrays: dict[str, np.ndarray]) -> None:
  """`np.savez` under a temporary name, then renamed: a cut-off write leaves no `path`."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  temporary = f'{path}.incomplete-{os.getpid()}'
  with open(temporary, 'wb') as f:
    np.savez(f, **arrays)
  os.replace(temporary, path)


def _batches(data_config, input_path: str, vocab_file: str, seed: int, batch_size: int = 1024):
  """NumPy batches of one pass over `input_path`, masked by teams_tf's pipeline with `seed`."""
  config = data_config.replace(input_path=input_path, input_format='tfrecord',
                               vocab_file=vocab_file, is_training=False, seed=seed,
                               global_batch_size=batch_size, drop_remainder=False)
  return pretrain_dataloader.PretrainDataLoader(config).load().as_numpy_iterator()


def evaluation_set(validation_data, input_path: str, vocab_file: str, path: str) -> str:
  """Writes (once) every held-out sequence, masked at `validation_data`'s rate, to `path`.

  Args:
    validation_data: the recipe's `PretrainDataConfig` for evaluation (its mask rate, P, T).
    input_path: the held-out unmasked records.
    vocab_file: their vocabulary.
    path: the `.npz` to write, with `EVALUATION_FEATURES`: `input_word_ids`, `input_mask`,
      `input_type_ids` int32 [N, T] and `masked_lm_positions`, `masked_lm_ids` int32,
      `masked_lm_weights` float32 [N, P] (weight 0 slots are padding).

  Returns:
    `path`.
  """
  if not os.path.exists(path):
    print(f'writing the evaluation set {path}', flush=True)
    batches = list(_batches(validation_data, input_path, vocab_file, seed=0))
    arrays = {name: np.concatenate([batch[name] for batch in batches])
              for name in EVALUATION_FEATURES}
    _write_arrays(path, arrays)
  return path


def load_evaluation_set(path: str) -> dict[str, np.ndarray]:
  with np.load(path) as arrays:
    return {name: arrays[name] for name in EVALUATION_FEATURES}


def epochs_needed(train_steps: int, batch_size: int, num_sequences: int) -> int:
  """Passes over `num_sequences` that `train_steps` batches of `batch_size` reach."""
  return max(1, math.ceil(train_steps * batch_size / num_sequences))


def masked_epochs(train_data, input_path: str, vocab_file: str, num_sequences: int,
                  epochs: int, out_dir: str) -> str:
  """Writes (once) the training records masked anew for each of `epochs` passes.

  Epoch e is one pass masked with seed e + 1, in `_SHARDS_PER_EPOCH` shards named by the epoch,
  so that Model Garden's loader, which interleaves the shards it is given, reads epoch 0 before
  epoch 1 (its file glob sorts them so). A finished epoch is kept when more are asked for.

  Args:
    train_data: the recipe's training `PretrainDataConfig` (its mask rate, 80/10/10, P, T).
    input_path: the unmasked training records.
    vocab_file: their vocabulary.
    num_sequences: how many sequences they hold (for the progress line).
    epochs: passes to write.
    out_dir: gets `epoch-<e>-<shard>.tfrecord` and a `epoch-<e>.done` marker per epoch.

  Returns:
    `masked_epochs_pattern(out_dir)`.
  """
  os.makedirs(out_dir, exist_ok=True)
  for epoch in range(epochs):
    done = os.path.join(out_dir, f'epoch-{epoch:03d}.done')
    if os.path.exists(done):
      continue
    print(f'writing epoch {epoch + 1} of {epochs} of the masked training records '
          f'({num_sequences:,} sequences) to {out_dir}', flush=True)
    names = [os.path.join(out_dir, f'epoch-{epoch:03d}-{shard:02d}.tfrecord')
             for shard in range(_SHARDS_PER_EPOCH)]
    writers = [tf.io.TFRecordWriter(name) for name in names]
    count = 0
    for batch in _batches(train_data, input_path, vocab_file, seed=epoch + 1):
      for row in range(len(batch['input_word_ids'])):
        features = {record: batch[name][row] for record, name in _RECORD_FEATURES.items()}
        writers[count % _SHARDS_PER_EPOCH].write(record_format.serialize(features))
        count += 1
    for writer in writers:
      writer.close()
    atomic_files.write_json(done, dict(sequences=count, seed=epoch + 1))
  return masked_epochs_pattern(out_dir)


def masked_epochs_pattern(out_dir: str) -> str:
  """The glob of `masked_epochs`' records in `out_dir`, in Model Garden's `input_path` form."""
  return os.path.join(out_dir, 'epoch-*.tfrecord')


def token_arrays(input_path: str, seq_length: int, path: str) -> str:
  """Writes (once) the unmasked records as `input_ids`, `attention_mask`, `token_type_ids`.

  The arrays are [N, T] int32 in the records' file order (Hugging Face's sampler shuffles
  them), in an uncompressed `.npz` so that a PyTorch process reads them without TensorFlow.
  """
  if not os.path.exists(path):
    print(f'writing the training records as arrays to {path}', flush=True)
    spec = record_format.feature_spec(
        record_format.RecordOptions(vocab_file='', seq_length=seq_length, output_kind='unmasked'))
    files = sorted(tf.io.gfile.glob(input_path))
    dataset = tf.data.TFRecordDataset(files).map(
        lambda record: tf.io.parse_single_example(record, spec)).batch(4096)
    rows = list(dataset.as_numpy_iterator())
    arrays = {hf: np.concatenate([row[name] for row in rows]).astype(np.int32)
              for name, hf in (('input_ids', 'input_ids'), ('input_mask', 'attention_mask'),
                               ('segment_ids', 'token_type_ids'))}
    _write_arrays(path, arrays)
  return path
