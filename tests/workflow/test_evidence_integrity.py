"""Per-run integrity of evidence (finding 5 of issue 45). One SageMaker role serves every run of a stack, and it may
write anywhere under debug-output/ and checkpoints/: listing checkpoints/ showed every job's name, so one run's script
could write debug-output/<another run's job>/rule-status.json naming that job, and the monitor took it. Now each job's
evidence is under <job>/<token>/, the token an HMAC of the job's name under its execution's secret, which the role
can neither list nor compute: a document anywhere else is never read, and one under the right key naming another job
is refused."""

from __future__ import annotations

import json

import boto3
from workflow_harness import BASE_INPUT, BUCKET, REGION, RuleScript, Tick, completed, rule_status_document

from contracts import bucket_layout
from lambdas.remediation.job import job_identity


def forge_clean_documents(workflow, job_name: str) -> list[str]:
    """What another run's script can do: write a document naming ``job_name``, every rule NoIssuesFound and training
    ended, at the job's conventional key and at a token of its own making."""
    s3 = boto3.client("s3", region_name=REGION)
    selected = tuple(rule["name"] for rule in workflow.sagemaker.selected_rules(job_name))  # every rule it must report
    forged = rule_status_document(job_name, RuleScript(fired=None), selected).to_json().encode()
    guessed = job_identity.evidence_prefixes(job_name, job_identity.new_evidence_key()).debug_output
    keys = [bucket_layout.rule_status_key(job_name), f"{guessed}rule-status.json"]
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=forged)
    return keys


def test_a_document_forged_by_another_runs_job_is_refused(workflow):
    """The job completes but its debugger never wrote a status (its evidence is missing); another run's job forges a
    clean one naming it. The run must not succeed on it: it ends MissingEvidence (it used to end SUCCEEDED)."""
    sagemaker = workflow.script([Tick(status="InProgress"), Tick(status="Completed", secondary="Completed")])
    forged: list[str] = []
    workflow.on_launch(lambda name: forged.extend(forge_clean_documents(workflow, name)))
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 1})

    job = sagemaker.created[0]["TrainingJobName"]
    assert forged and all(job in key for key in forged)
    assert execution.status == "FAILED" and execution.error == "MissingEvidence", (execution.status, execution.cause)
    bucket, own_key = sagemaker.rule_status_location(job)
    assert own_key not in forged and own_key.startswith(f"debug-output/{job}/")
    token = own_key.split("/")[2]
    assert token == job_identity.evidence_token(evidence_key(workflow), job) and len(token) == 32


def evidence_key(workflow) -> str:
    """The execution's secret, from the state its history carries (its output is empty when it failed)."""
    for event in workflow.history():
        text = (event.get("stateEnteredEventDetails") or {}).get("input") or ""
        if '"evidence_key"' in text:
            return json.loads(text)["state"]["evidence_key"]
    raise AssertionError("no state with an evidence_key in the history")


def test_a_document_under_the_jobs_own_key_naming_another_job_is_refused(workflow):
    sagemaker = workflow.script([completed(rules=None)])
    workflow.on_launch(lambda name: None)
    # the job's own document names another job (copied there): not this job's evidence
    sagemaker.timelines[0] = [Tick(status="Completed", secondary="Completed", rule_status=RuleScript(fired=None, job_name="remediation-other-0123456789-001"))]
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 1})
    assert execution.status == "FAILED" and execution.error == "MissingEvidence"
    assert "names job remediation-other-0123456789-001" in execution.cause


def test_the_real_document_under_the_token_still_makes_a_success(workflow):
    sagemaker = workflow.script([completed()])
    workflow.on_launch(lambda name: forge_clean_documents(workflow, name))
    execution = workflow.run(BASE_INPUT)
    assert execution.status == "SUCCEEDED", execution.cause
    job = sagemaker.created[0]["TrainingJobName"]
    hook_path = sagemaker.rule_status_location(job)[1]
    assert hook_path == job_identity.evidence_prefixes(job, execution.output["state"]["evidence_key"]).debug_output + "rule-status.json"
