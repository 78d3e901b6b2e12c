"""The contracts the training job and the workflow share. Standard library only.

Both sides import these modules, so a shape changes in one place and breaks
both sides' tests at once:

* ``contracts.job``            the container contract: hyperparameter encoding, reserved
                               hyperparameters, environment, exit codes, failure text
* ``contracts.debugger_config`` hook and rule configuration (SageMaker's DebugHookConfig /
                               DebugRuleConfigurations shapes), built-in rule parameters
* ``contracts.rule_status``     the rule-status document the job writes and the monitor reads
* ``contracts.progress_log``    progress lines and SageMaker MetricDefinitions
* ``contracts.bucket_layout``   where everything lives in the artifacts bucket
* ``contracts.run_spec``        the run_spec's bounds, patterns and declarations
* ``contracts.atomic_files``    the one way either side writes a file a reader may see

Nothing here imports anything outside the standard library: the Lambda bundle,
the training job and the local runtime all carry it.
"""

from __future__ import annotations


class ContractError(ValueError):
    """A configuration or document breaks a shared shape; ``field`` names where and ``problem`` what."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")
