"""The Powertools layer: AWS's public layer where it is published, a bundled one elsewhere; and a stack with an
account and region passes cdk-nag like an environment-agnostic one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cdk_synth import synthesize

from infra.app import build_app
from infra.bundling import RUNTIME_PROVIDED
from infra.powertools_layer import (
    LAYER_REQUIREMENTS,
    PUBLIC_LAYER_REGIONS,
    LayerBundleError,
    PipLayerBundling,
    choose_layer,
    pip_install_command,
)

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

REPO_ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"
#: Skips asset bundling (the handler code and a bundled layer): the template is what these tests read.
NO_BUNDLING = {"aws:cdk:bundling-stacks": []}


def _powertools_parameters(synthesized) -> list[str]:
    return [p["Default"] for p in synthesized.template.get("Parameters", {}).values() if "powertools" in p["Default"]]


def _nag_clean(synthesized) -> bool:
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    return all(r.get("conclusion") == "success" for r in report["pluginReports"])


def test_a_stack_with_account_and_region_passes_cdk_nag_and_uses_the_public_layer_where_published(tmp_path):
    synthesized = synthesize(tmp_path, account=ACCOUNT, region="eu-west-1", **NO_BUNDLING)
    assert _nag_clean(synthesized)
    assert _powertools_parameters(synthesized) == ["/aws/service/powertools/python/x86_64/python3.13/3.37.0"]
    assert not synthesized.resources("AWS::Lambda::LayerVersion")


def test_a_region_without_the_public_layer_gets_the_bundled_layer(tmp_path):
    assert "ap-southeast-5" not in PUBLIC_LAYER_REGIONS
    synthesized = synthesize(tmp_path, account=ACCOUNT, region="ap-southeast-5", **NO_BUNDLING)
    assert _nag_clean(synthesized)
    assert _powertools_parameters(synthesized) == []  # nothing to resolve in a region without the parameter
    ((layer_id, layer),) = synthesized.resources("AWS::Lambda::LayerVersion").items()
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["x86_64"]
    for function in synthesized.resources("AWS::Lambda::Function").values():
        assert function["Properties"]["Layers"] == [{"Ref": layer_id}]


def test_the_choice_follows_the_context_then_the_region_then_the_cli_target(monkeypatch):
    monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)
    assert choose_layer("auto", "us-east-1") == "public"
    assert choose_layer("auto", "mx-central-1") == "bundled"
    assert choose_layer("public", "mx-central-1") == "public"  # said explicitly: the user knows better
    assert choose_layer("bundled", "us-east-1") == "bundled"
    token_region = "${Token[AWS.Region.9]}"  # an environment-agnostic stack's region
    assert choose_layer("auto", token_region) == "public"
    monkeypatch.setenv("CDK_DEFAULT_REGION", "cn-north-1")  # what `cdk deploy` sets for the app it runs
    assert choose_layer("auto", token_region) == "bundled"
    monkeypatch.setenv("CDK_DEFAULT_REGION", "eu-central-1")
    assert choose_layer("auto", token_region) == "public"


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"powertools_layer": "docker"}, "powertools_layer"),
        ({"powertools_layer": "bundled", "powertools_version": "3.36.0"}, "powertools_version"),
    ],
)
def test_a_bad_layer_choice_is_refused_naming_it(tmp_path, context, named):
    with pytest.raises(ValueError) as raised:
        build_app({**context, **NO_BUNDLING}, outdir=str(tmp_path))
    assert str(raised.value).startswith(named + ":"), raised.value


def test_the_bundled_layer_is_built_by_pip_for_lambdas_platform_without_docker(tmp_path):
    command = pip_install_command(str(tmp_path))
    assert command[:4] == [sys.executable, "-m", "pip", "install"]
    for flags in (
        ["--platform", "manylinux2014_x86_64"],
        ["--python-version", "3.13"],
        ["--implementation", "cp"],
        ["--target", str(tmp_path / "python")],  # a Python layer's code lives under python/
        ["--requirement", str(LAYER_REQUIREMENTS)],
    ):
        index = command.index(flags[0])
        assert command[index : index + 2] == flags
    assert "--only-binary=:all:" in command and "--no-deps" in command
    recorded = tmp_path / "argv.json"
    fake_pip = [sys.executable, "-c", f"import json, sys; json.dump(sys.argv[1:], open({str(recorded)!r}, 'w'))"]
    assert PipLayerBundling(lambda out: [*fake_pip, out]).try_bundle(str(tmp_path / "out")) is True
    assert json.loads(recorded.read_text()) == [str(tmp_path / "out")]
    failing_pip = [sys.executable, "-c", "import sys; print('no index'); sys.exit(3)"]
    with pytest.raises(LayerBundleError, match=r"(?s)powertools_layer=bundled: pip could not build .*no index"):
        PipLayerBundling(lambda out: failing_pip).try_bundle(str(tmp_path / "out"))


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def test_the_bundled_layer_holds_what_the_handlers_expect_from_the_layer_at_the_tested_pins():
    layer = _pins(LAYER_REQUIREMENTS)
    runtime = _pins(REPO_ROOT / "requirements.txt")
    assert {name: runtime[name] for name in layer} == layer  # the versions the handlers are tested with
    provided_by_layer = {name.replace("_", "-") for name in RUNTIME_PROVIDED} - {"boto3", "botocore"}
    assert provided_by_layer <= set(layer), provided_by_layer - set(layer)
