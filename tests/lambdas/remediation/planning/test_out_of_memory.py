"""A job that runs out of memory is a failure with its own remedy (a smaller batch, the learning rates scaled
with it), not the end of the run."""

from __future__ import annotations

import pytest

from contracts.job import killed_process_failure_text
from contracts.remedies import FAILURE_KINDS, OUT_OF_MEMORY, parse_remedies
from lambdas.plan_handler import end_error
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.monitoring import verdict as monitoring
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.text.decision_text import headline
from tests.lambdas.remediation.decision_fields import changes_of, ended

JOB = "remediation-resnet-0123456789-001"


def _failed(reason: str) -> dict:
    return {"TrainingJobName": JOB, "TrainingJobStatus": "Failed", "SecondaryStatus": "Failed", "FailureReason": reason}


@pytest.mark.parametrize(
    ("reason", "outcome"),
    [
        (killed_process_failure_text("SIGKILL", 9, "3.1 GiB"), "out_of_memory"),  # the local platform's
        ("OutOfMemoryError: Please use an instance type with more memory, or reduce the size of job data", "out_of_memory"),
        ('AlgorithmError: ExecuteUserScriptError:\nExitCode 137\nErrorMessage ""\nCommand "python train.py"', "out_of_memory"),
        ("AlgorithmError: OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out_of_memory"),
        (killed_process_failure_text("SIGSEGV", 11, None), "algorithm_error"),
        ("AlgorithmError: ExecuteUserScriptError: ExitCode 1 ErrorMessage ImportError", "algorithm_error"),
    ],
)
def test_the_monitor_reads_out_of_memory_from_the_failure_reason(account_input, reason, outcome):
    state = initial_state(account_input).with_new_attempt(JOB)
    decision = monitoring.decide(_failed(reason), [], state)
    assert (decision.next_step, decision.outcome) == ("plan", outcome)


def test_the_evidence_remedies_halve_the_batch_and_scale_the_learning_rates(account_input, record):
    reason = killed_process_failure_text("SIGKILL", 9, "3.1 GiB")
    planned = plan(record(initial_state(account_input), outcome="out_of_memory", failure_reason=reason))
    assert planned.next_action == "launch_new"
    hyperparameters = planned.run_spec.hyperparameters
    assert hyperparameters["batch_size"] == 64 and isinstance(hyperparameters["batch_size"], int)
    assert hyperparameters["learning_rate"] == pytest.approx(0.05)
    assert hyperparameters["warmup_learning_rate"] == pytest.approx(0.05)
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("HalveBatchSize", "out_of_memory")
    assert changes_of(decision) == {
        "batch_size": (128, 64), "learning_rate": (0.1, 0.05), "warmup_learning_rate": (0.1, 0.05)
    }  # fmt: skip
    assert headline(planned.last_attempt, planned) == (
        "Job remediation-resnet-1 ran out of memory (OutOfMemoryError: the training process was killed by SIGKILL "
        "(signal 9), as the kernel's out-of-memory killer ends a process (ExitCode 137); peak memory 3.1 GiB)"
    )


def test_without_an_out_of_memory_remedy_the_run_ends_naming_it(account_input, record):
    state = initial_state({**account_input, "policy": "anchor"})  # the sample's ladder has none
    planned = plan(record(state, outcome="out_of_memory", failure_reason="OutOfMemoryError: killed"))
    assert planned.next_action == "end"
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", "out_of_memory") and decision.cause == "out_of_memory"
    assert planned.run_spec == state.run_spec  # its words: test_reasons.py
    assert end_error(planned) == "TrainingOutOfMemory"


def test_a_run_spec_declares_out_of_memory_remedies_for_its_own_script():
    assert OUT_OF_MEMORY in FAILURE_KINDS
    remedies = parse_remedies(
        {"out_of_memory": [{"hyperparameter": "batch", "multiply_by": 0.5, "min": 4, "also": [{"hyperparameter": "lr", "multiply_by": 0.5}]}]},
        {"batch": 32, "lr": 0.01},
    )
    (remedy,) = remedies[OUT_OF_MEMORY]
    assert remedy.apply({"batch": 32, "lr": 0.01}) == {"batch": 16, "lr": 0.005}
