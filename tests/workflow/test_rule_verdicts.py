"""No false success (finding 2 of issue 23): a completed job counts only when every rule that must report on it
(each selected rule, and in legacy mode SageMaker's evaluation of it besides) says NoIssuesFound, and the objective
is met. A rule still evaluating is waited for, within a bound; one in Error is missing evidence, said so; a status
document that is not the job's own is refused."""

from __future__ import annotations

from workflow_harness import BASE_INPUT, RuleScript, Tick, completed, issues_found, running

LEGACY = {**BASE_INPUT, "legacy_sagemaker_debugger": True}
DEFAULTS = ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing")


def legacy(status: str, **overrides: str) -> dict[str, str]:
    return {f"Sagemaker{name}": overrides.get(name, status) for name in DEFAULTS}


def test_legacy_rules_still_evaluating_at_completion_are_waited_for_and_their_issue_is_planned(workflow):
    """Right after the job completes SageMaker's rule evaluators are still InProgress; one then finds an issue.
    Counting the job as clean at that moment would end the run 'completed' on a job that exploded."""
    sagemaker = workflow.script(
        [completed(legacy=[legacy("InProgress"), legacy("InProgress"), legacy("NoIssuesFound", ExplodingTensor="IssuesFound")])],
        [completed(legacy=legacy("NoIssuesFound"))],
    )
    execution = workflow.run(LEGACY)

    assert execution.status == "SUCCEEDED", execution.cause
    first, second = execution.output["state"]["attempts"]
    assert first["outcome"] == "issues_found" and first["issue"]["rule"] == "SagemakerExplodingTensor"
    assert second["outcome"] == "completed"
    assert len(sagemaker.created) == 2
    entered = [e["stateEnteredEventDetails"]["name"] for e in workflow.history() if "stateEnteredEventDetails" in e]
    assert entered.count("WaitForRules") == 2


def test_legacy_rules_that_never_finish_end_the_attempt_as_missing_evidence_after_the_bound(workflow):
    from contracts.run_spec import RULE_WAITS

    workflow.script([completed(legacy=legacy("InProgress"))])
    execution = workflow.run({**LEGACY, "max_num_retraining": 1})

    assert execution.status == "FAILED" and execution.error == "MissingEvidence"
    assert f"still evaluating after {RULE_WAITS} waits" in execution.cause
    entered = [e["stateEnteredEventDetails"]["name"] for e in workflow.history() if "stateEnteredEventDetails" in e]
    assert entered.count("WaitForRules") == RULE_WAITS


def test_an_in_job_rule_in_error_is_missing_evidence_not_a_clean_job(workflow):
    workflow.script([completed(errors=("VanishingGradient",))])
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 1})

    assert execution.status == "FAILED" and execution.error == "MissingEvidence"
    assert "VanishingGradient (Error)" in execution.cause and "gave no verdict" in execution.cause


def test_a_selected_rule_missing_from_the_document_is_waited_for_not_assumed_clean(workflow):
    """The document lists two of the three selected rules: the third has no verdict yet."""
    workflow.script([completed(rules=("ExplodingTensor", "VanishingGradient"))])
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 1})

    assert execution.status == "FAILED" and execution.error == "MissingEvidence"
    assert "LossNotDecreasing" in execution.cause


def test_a_status_document_that_names_another_job_is_refused(workflow):
    """Every job of a stack runs under one SageMaker role, which may write any run's rule-status document: a
    document under this job's key that names another job is not this job's evidence."""
    forged = Tick(
        status="Completed",
        secondary="Completed",
        rule_status=RuleScript(fired=None, job_name="remediation-other-run-0000000000-001"),
    )
    workflow.script([forged])
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 1})

    assert execution.status == "FAILED" and execution.error == "MissingEvidence"
    assert "names job remediation-other-run-0000000000-001" in execution.cause


def test_a_clean_job_with_every_verdict_still_succeeds(workflow):
    workflow.script([running(), completed()])
    assert workflow.run(BASE_INPUT).status == "SUCCEEDED"


def test_an_issue_found_after_a_quiet_verdict_is_still_planned(workflow):
    workflow.script([issues_found("ExplodingTensor", step=2)], [completed()])
    execution = workflow.run(BASE_INPUT)
    assert execution.status == "SUCCEEDED"
    assert [a["outcome"] for a in execution.output["state"]["attempts"]] == ["issues_found", "completed"]
