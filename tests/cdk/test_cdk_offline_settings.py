"""The settings that keep `cdk synth` off the network and reproducible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_cdk_json_turns_off_notices_telemetry_and_version_reporting_and_runs_the_venv_python():
    config = json.loads((REPO_ROOT / "cdk.json").read_text())
    assert config["app"] == ".venv/bin/python app.py"
    assert config["notices"] is False
    assert config["cli-telemetry"] is False
    assert config["versionReporting"] is False
    assert config["context"]["@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"] is True


def test_the_cli_is_pinned_exactly_and_the_makefile_silences_it():
    package = json.loads((REPO_ROOT / "package.json").read_text())
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    assert package["devDependencies"]["aws-cdk"] == "2.1148.1"
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == "2.1148.1"
    makefile = (REPO_ROOT / "Makefile").read_text()
    for setting in (
        "CDK_DISABLE_CLI_TELEMETRY := 1",
        "CDK_DISABLE_VERSION_CHECK := 1",
        "npm_config_update_notifier := false",
    ):
        assert f"export {setting}" in makefile


def test_two_synths_write_the_same_template(synthesized, tmp_path):
    from cdk_synth import synthesize

    again = synthesize(tmp_path)
    assert again.template == synthesized.template
