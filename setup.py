"""teams_tf: efficient text-encoder pretraining (TEAMS, ELECTRA, BERT, ...) on TF Model Garden."""

import setuptools

setuptools.setup(
    name='teams_tf',
    version='0.1.0',
    description=('Text-encoder pretraining objectives (TEAMS, ELECTRA, BERT, '
                 'COCO-LM, TACO, SCRIPT) on TensorFlow Model Garden.'),
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    license='Apache-2.0',
    license_files=['LICENSE', 'teams_tf/data/sample/SOURCE.md'],
    python_requires='>=3.10,<3.13',
    packages=setuptools.find_packages(include=['teams_tf', 'teams_tf.*']),
    package_data={'teams_tf': ['data/sample/*.txt', 'data/sample/*.md']},
    install_requires=[
        # Model Garden 2.20 is built and tested against TF/TF-Text/tf-keras 2.20.
        'tensorflow~=2.20.0',
        'tf-keras~=2.20.0',
        'tf-models-official~=2.20.0',
        'tensorflow-text~=2.20.0',
        'tensorflow-datasets>=4.9',
        'gin-config>=0.5',
        'absl-py>=1.4',
        # tensorflow-hub, which Model Garden's NLP tasks import, still needs pkg_resources, gone
        # from setuptools 81 on (torch in the `hf` extra would otherwise pull the newest).
        'setuptools<81',
    ],
    extras_require={
        # Hugging Face export (tools/convert_to_hf.py); torch 2.13 has a CPU build on PyPI. The
        # export's tests pass on transformers 4.57 and 5.24; a major release is not yet known.
        'hf': ['torch==2.13.0', 'transformers>=4.57,<6'],
        # ruff: the lint that tests/lint_test.py runs (ruff.toml); accelerate: transformers.Trainer,
        # the Hugging Face peer of the time-to-accuracy benchmark (teams_lab/hugging_face_mlm.py).
        'test': ['pytest>=8', 'pytest-xdist>=3', 'ruff~=0.17.6', 'torch==2.13.0',
                 'transformers>=4.57,<6', 'accelerate>=1.0'],
    },
    # Every user tool, beside `python tools/<name>.py` in a clone (`tests/cli_test.py`).
    entry_points={'console_scripts': [
        'teams-train=teams_tf.train:run',
        'teams-build-vocab=teams_tf.cli.build_vocab:run',
        'teams-create-pretraining-data=teams_tf.cli.create_pretraining_data:run',
        'teams-create-glue-data=teams_tf.cli.create_glue_data:run',
        'teams-run-glue=teams_tf.cli.run_glue:run',
        'teams-export=teams_tf.cli.export_savedmodel:run',
        'teams-convert-to-hf=teams_tf.cli.convert_to_hf:run',
        'teams-score=teams_tf.cli.score:run',
        'teams-contextual-score=teams_tf.cli.contextual_score:run',
        'teams-minimal-pairs=teams_tf.cli.minimal_pairs:run',
    ]},
)
