"""How an execution's training jobs are named and recognised as its own: the deterministic job name (the
execution's ARN and start time, and the attempt), the tags that prove ownership (checked before a job is adopted or
stopped by name), the tags recording what a launch resumed from, and the prefixes of a job's own evidence (its debug
output and checkpoints, under a secret of its execution's). Standard library + the shared contracts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
import re
import secrets

from contracts import aws_tags, bucket_layout
from contracts.run_spec import JOB_NAME_PATTERN, MAX_JOB_NAME_LENGTH
from lambdas.remediation.job.checkpoint_resume import CopiedCheckpoints, Resumed

DEFAULT_JOB_NAME_PREFIX = "remediation"
_NOT_NAME_CHARACTER = re.compile(r"[^a-zA-Z0-9-]+")


class JobRequestError(ValueError):
    """The request cannot be built for this run_spec; the message names the field and the fix."""


def job_name_prefix() -> str:
    """env JOB_NAME_PREFIX (the IAM policy allows jobs whose names start with it), default "remediation"."""
    prefix = os.environ.get("JOB_NAME_PREFIX", DEFAULT_JOB_NAME_PREFIX)
    if not prefix or len(prefix) > 24 or not JOB_NAME_PATTERN.match(prefix):
        raise JobRequestError(
            f"JOB_NAME_PREFIX: must be 1-24 letters, digits and hyphens starting with a letter or digit (got {prefix!r})"
        )
    return prefix


def execution_identity(execution_id: str, execution_start_time: str) -> str:
    """What names an execution's jobs: its ARN and its start time (a name alone can be reused, by another state
    machine or after Step Functions forgets a closed execution)."""
    if not execution_id or not execution_start_time:
        raise JobRequestError(
            "execution_id, execution_start_time: the task payload must carry $$.Execution.Id and "
            "$$.Execution.StartTime (statemachine/remediation.asl.json passes both)"
        )
    return f"{execution_id}@{execution_start_time}"


def training_job_name(
    execution_identity: str, base_job_name: str, attempt_number: int, prefix: str | None = None
) -> str:
    """``{prefix}-{base}-{execution digest}-{attempt}``: the same inputs always give the same name.

    So a retried Train task finds its own job (ResourceInUse) instead of launching
    a second one. The identity is the execution's ARN and start time, so two
    executions never share a name, even one that reuses another's name. At most 63 characters.
    """
    if attempt_number < 1:
        raise JobRequestError(f"attempt_number: must be >= 1 (got {attempt_number})")
    prefix = job_name_prefix() if prefix is None else prefix
    digest = hashlib.sha256(execution_identity.encode()).hexdigest()[:10]
    suffix = f"{digest}-{attempt_number:03d}"
    base = _NOT_NAME_CHARACTER.sub("-", base_job_name).strip("-")
    if base == prefix or base.startswith(prefix + "-"):  # "remediation" + "remediation-resnet": say it once
        base = base[len(prefix) :].strip("-")
    room = MAX_JOB_NAME_LENGTH - len(prefix) - len(suffix) - 2
    base = base[: max(room, 0)].strip("-")
    name = "-".join(part for part in (prefix, base, suffix) if part)
    name = re.sub("-{2,}", "-", name)
    if len(name) > MAX_JOB_NAME_LENGTH or not JOB_NAME_PATTERN.match(name):  # pragma: no cover - by construction
        raise JobRequestError(f"job name {name!r} is not a valid SageMaker training job name")
    return name


#: Tags that prove a job is this execution's own (checked before adopting or stopping a job by name).
EXECUTION_TAG = "remediation:execution"
EXECUTION_START_TAG = "remediation:execution-start"
ATTEMPT_TAG = "remediation:attempt"
#: What the launch started from: the job whose checkpoints were carried over, and how many files ("skipped": none).
RESUMED_FROM_TAG = "remediation:resumed-from"
RESUMED_FILES_TAG = "remediation:resumed-files"
RESUME_SKIPPED = "skipped"


def ownership_tags(execution_id: str, execution_start_time: str, attempt_number: int) -> dict[str, str]:
    """The execution's ARN and start time as tag values: a Step Functions name may hold characters a SageMaker tag
    may not (contracts.aws_tags), which are replaced; with the start time they still name one execution."""
    return {
        EXECUTION_TAG: aws_tags.tag_value(execution_id),
        EXECUTION_START_TAG: aws_tags.tag_value(execution_start_time),
        ATTEMPT_TAG: str(attempt_number),
    }


def owned_by(tags: list[dict[str, str]], execution_id: str, execution_start_time: str) -> bool:
    """Whether a job's tags (SageMaker ListTags) say this execution launched it."""
    found = {tag.get("Key"): tag.get("Value") for tag in tags}
    expected = ownership_tags(execution_id, execution_start_time, 0)
    return found.get(EXECUTION_TAG) == expected[EXECUTION_TAG] and (
        found.get(EXECUTION_START_TAG) == expected[EXECUTION_START_TAG]
    )


def resume_tags(resumed: Resumed) -> dict[str, str]:
    """Tags recording what the launch started from, so a retried task that adopts the job knows it too."""
    if resumed.from_job is None:
        return {}
    files = str(resumed.copied.files) if resumed.copied is not None else RESUME_SKIPPED
    return {RESUMED_FROM_TAG: resumed.from_job, RESUMED_FILES_TAG: files}


def resumed_from_tags(tags: list[dict[str, str]]) -> Resumed:
    found = {tag.get("Key"): tag.get("Value") for tag in tags}
    from_job, files = found.get(RESUMED_FROM_TAG), found.get(RESUMED_FILES_TAG)
    if not from_job:
        return Resumed()
    if files is None or not files.isdigit():
        return Resumed(from_job, skipped="an earlier try of this task launched the job without its checkpoints")
    return Resumed(from_job, CopiedCheckpoints(from_job, "", files=int(files), bytes=0))


# --------------------------------------------------------------------------- the job's own evidence

#: Characters of the secret part of a job's evidence prefixes: 128 bits, hex.
EVIDENCE_TOKEN_LENGTH = 32


def new_evidence_key() -> str:
    """An execution's secret (the state's evidence_key): random, 128 bits."""
    return secrets.token_hex(EVIDENCE_TOKEN_LENGTH // 2)


def evidence_token(evidence_key: str, job_name: str) -> str:
    """The secret part of ``job_name``'s evidence prefixes, from its execution's key ("" without one). The same for
    every try of the launch (a retried task copies its checkpoints to the same place) and unguessable without the
    key, which only the execution's state holds."""
    if not evidence_key:
        return ""
    return hmac.new(evidence_key.encode(), job_name.encode(), hashlib.sha256).hexdigest()[:EVIDENCE_TOKEN_LENGTH]


@dataclasses.dataclass(frozen=True)
class EvidencePrefixes:
    """Where a job writes what the workflow trusts: its debugger's output (rule-status.json) and its checkpoints."""

    debug_output: str
    checkpoints: str


def evidence_prefixes(job_name: str, evidence_key: str) -> EvidencePrefixes:
    """``debug-output/<job>/<token>/`` and ``checkpoints/<job>/<token>/`` (without a key: ``debug-output/<job>/`` and
    ``checkpoints/<job>/``). A job's role may list ``checkpoints/`` only below a token (infra/sagemaker_role.py) and
    ``debug-output/`` not at all, so one run's job can neither find nor write another run's evidence."""
    token = evidence_token(evidence_key, job_name)
    suffix = f"{token}/" if token else ""
    return EvidencePrefixes(
        debug_output=f"{bucket_layout.DEBUG_OUTPUT_PREFIX}{job_name}/{suffix}",
        checkpoints=f"{bucket_layout.CHECKPOINTS_PREFIX}{job_name}/{suffix}",
    )
