"""The built-in example, the reference scenario of the AWS blog post, as execution-input defaults.

The example is a training script like any other: ``examples/resnet/train.py``
(an ELU ResNet-20, SGD, a warmup learning rate, then the main one), packed by
``remediate cloud upload-source`` to ``s3://<bucket>/code/sourcedir.tar.gz``.
Nothing here imports it: this module only says what an execution input that
names no script of its own runs, so that the AWS sample's own execution input
(``init_warmup_learning_rate``, ``learning_rate``, ``add_batch_norm``,
``num_epochs``, ...) still means what it meant there.
"""

from __future__ import annotations

from typing import Any

from contracts import bucket_layout
from contracts.progress_log import METRIC_DEFINITIONS

ENTRY_POINT = "train.py"
BASE_JOB_NAME = "remediation-resnet"
#: The example's hyperparameters the workflow passes: every one the built-in remedies change
#: (lambdas.remediation.planning.remedies.sets), at the script's defaults, and the reference scenario's (the script's other
#: ones keep its defaults: depth 20, warmup 1 epoch, momentum 0.9).
HYPERPARAMETERS: dict[str, Any] = {
    "warmup_learning_rate": 0.1,
    "learning_rate": 0.1,
    "add_batch_norm": False,
    "num_epochs": 2,
    "activation": "elu",
    "batch_size": 128,
    "grad_clip": 0.0,
    "weight_decay": 1e-4,
    "dropout": 0.0,
    "init_scale": 1.0,
    "class_weighting": "none",
    "early_stopping_patience": 0,
    "normalize_inputs": True,
    "num_workers": 0,
}
#: The AWS sample's execution-input keys, and the example's hyperparameter each one sets.
SAMPLE_KEYS = {
    "init_warmup_learning_rate": "warmup_learning_rate",
    "learning_rate": "learning_rate",
    "add_batch_norm": "add_batch_norm",
    "num_epochs": "num_epochs",
}
#: The example prints progress lines (contracts.progress_log); these regexes read them.
EXAMPLE_METRIC_DEFINITIONS = [dict(definition) for definition in METRIC_DEFINITIONS]
#: What "good" means for the reference scenario: it reaches 1.00 held-out accuracy once it trains stably.
OBJECTIVE = {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9}
DEFAULT_POLICY = "evidence"


def source_uri(bucket: str) -> str:
    return bucket_layout.source_archive_uri(bucket)


def channels(bucket: str) -> dict[str, str]:
    return {name: bucket_layout.s3_uri(bucket, prefix) for name, prefix in bucket_layout.CHANNEL_PREFIXES.items()}
