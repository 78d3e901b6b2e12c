"""cdk-nag's AwsSolutions pack on every synth (zero unacknowledged findings), and cfn-lint on the template."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import aws_s3 as s3
from cdk_synth import acknowledgements

from infra.app import build_app

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

REPO_ROOT = Path(__file__).resolve().parents[2]
CFN_LINT = str(Path(sys.executable).parent / "cfn-lint")  # the pinned cfn-lint of this virtualenv


def test_synth_passes_the_aws_solutions_pack_with_zero_unacknowledged_findings(synthesized):
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []


def test_each_acknowledgement_states_its_reason_in_one_line(synthesized):
    acknowledged = [
        (path, rule, reason) for path, rules in acknowledgements(synthesized).items() for rule, reason in rules.items()
    ]
    assert len(acknowledged) == 29, acknowledged  # the table in docs/cloud.md lists them (legacy mode adds 4)
    for path, rule, reason in acknowledged:
        assert rule.startswith("AwsSolutions::AwsSolutions-"), (path, rule)
        assert reason.strip() and "\n" not in reason and len(reason) <= 120, (path, rule, reason)
    rules = {rule.split("::", 1)[1].split("[")[0] for _, rule, _ in acknowledged}
    assert rules == {"AwsSolutions-IAM5", "AwsSolutions-S1", "AwsSolutions-L1", "AwsSolutions-SQS3"}


def test_a_finding_nobody_acknowledged_fails_the_synth(tmp_path):
    app, stack = build_app(outdir=str(tmp_path))
    s3.Bucket(stack, "CarelessBucket")  # no TLS enforcement, no access logs
    with pytest.raises(Exception) as raised:
        app.synth()
    assert "ValidationFailed" in str(raised.value)
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failing = {v["ruleName"] for r in report["pluginReports"] for v in r["violations"]}
    assert {"AwsSolutions-S1", "AwsSolutions-S10"} <= failing


@pytest.mark.parametrize("variant", [False, True])
def test_cfn_lint_passes_with_the_project_config(synthesized, variant_synthesized, variant):
    """The default stack, and the one with every optional part (legacy mode, the budget alarm)."""
    config = REPO_ROOT / ".cfnlintrc.yaml"
    assert "W3005" in config.read_text()
    result = subprocess.run(
        [CFN_LINT, str((variant_synthesized if variant else synthesized).template_path)],
        cwd=REPO_ROOT,  # cfn-lint reads .cfnlintrc.yaml from the working directory
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_stack_with_every_optional_part_passes_the_aws_solutions_pack(variant_synthesized):
    report = json.loads((variant_synthesized.outdir / "validation-report.json").read_text())
    assert [r for r in report["pluginReports"] if r.get("conclusion") != "success"] == []


def test_cfn_lint_is_not_silent_without_the_config(synthesized, tmp_path):
    result = subprocess.run(
        [CFN_LINT, str(synthesized.template_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # Only CDK's redundant DependsOn (W3005), which the config ignores with its reason.
    codes = {line.split()[0] for line in result.stdout.splitlines() if line[:1] in "EWI" and line[1:5].isdigit()}
    assert codes == {"W3005"}, result.stdout
