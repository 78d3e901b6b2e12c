"""The built-in remedy sets (``policy`` in the execution input), written in ``contracts.remedies``' declaration
form on conventional hyperparameter names.

* ``evidence`` (default): for every failure the debugger names, the remedies the evidence calls for, each stated
  with its numbers (``remedies.evidence``; why batch norm comes first on the reference scenario:
  docs/decisions/001-reference-scenario-batch-norm-first.md).
* ``anchor`` reproduces the AWS sample's fixed ladder exactly (``plan_launch_spec`` of the monitor Lambda of the
  AWS blog post "Automating complex deep learning model training using Amazon SageMaker Debugger and AWS Step
  Functions"): halve ``warmup_learning_rate`` while ``warmup_learning_rate / 5 >= 1e-3``; else add batch norm if
  absent; else ``learning_rate * 0.9`` while that stays ``> 1e-3``; else end.

The names are the built-in example's and, for gradient-boosted trees, SageMaker's XGBoost container's
(``contracts.conventional_hyperparameters``). A script of your own gets the same remedies on its own names and values:
the run's ``hyperparameter_names`` maps a conventional name to the script's (``{"learning_rate": "lr"}``, or
``{"add_batch_norm": {"name": "norm", "values": {"true": "batch", "false": "none"}}}``), and remedies on
hyperparameters or values the script does not have are left out (``contracts.remedies.adapt_to_script``).
"""

from __future__ import annotations

from typing import Any

from contracts.remedies import ANY_RULE
from lambdas.remediation.planning.remedies.evidence import (  # noqa: F401 - the set's constants, importable from here
    EVIDENCE_REMEDIES,
    LEARNING_RATE_CEILING,
    LEARNING_RATE_FLOOR,
    STABLE_WARMUP_LEARNING_RATE,
    USUAL_LEARNING_RATE,
    evidence_remedies,
)

ANCHOR_REMEDIES: dict[str, list[dict[str, Any]]] = {
    ANY_RULE: [
        # warmup / 5 >= 1e-3 before halving  <=>  warmup * 0.5 >= 0.0025 after it
        {"name": "HalveWarmupLearningRate", "hyperparameter": "warmup_learning_rate", "multiply_by": 0.5, "min": 0.0025},
        {"name": "AddBatchNorm", "hyperparameter": "add_batch_norm", "set_to": True},
        {"name": "ScaleLearningRate", "hyperparameter": "learning_rate", "multiply_by": 0.9, "above": 0.001},
    ]
}

#: Named remedy sets (``policy`` in the execution input); "declared" means the run's own ``remedies``.
POLICY_REMEDIES: dict[str, dict[str, list[dict[str, Any]]]] = {"evidence": EVIDENCE_REMEDIES, "anchor": ANCHOR_REMEDIES}
