"""The Lambda code asset: what it holds, and that the handlers import from it alone (no torch, no numpy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from infra.bundling import BundleError, plan_bundle, write_bundle

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

REPO_ROOT = Path(__file__).resolve().parents[2]
HANDLERS = ("lambdas.train_handler", "lambdas.monitor_handler", "lambdas.plan_handler")


def asset_path(synthesized, function: dict) -> Path:
    """The staged asset a function's Code points at, through the cloud assembly's asset manifest."""
    asset_hash = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    manifest = json.loads((synthesized.outdir / f"{synthesized.stack.stack_name}.assets.json").read_text())
    return synthesized.outdir / manifest["files"][asset_hash]["source"]["path"]


def asset_directory(synthesized) -> Path:
    (function,) = [
        f
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].startswith("lambdas.train")
    ]
    return asset_path(synthesized, function)


def test_the_three_functions_share_one_asset_holding_the_handlers_and_the_contracts_only(synthesized):
    paths = {asset_path(synthesized, f) for f in synthesized.resources("AWS::Lambda::Function").values()}
    assert len(paths) == 1
    bundle = asset_directory(synthesized)
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    for handler in HANDLERS:
        assert handler.replace(".", "/") + ".py" in files
    assert "contracts/rule_status.py" in files and "contracts/remedies.py" in files
    assert {f.split("/")[0] for f in files} == {"lambdas", "contracts"}  # no model, no debugger
    assert files == plan_files(REPO_ROOT)
    assert not [f for f in files if "__pycache__" in f or not f.endswith(".py")]


def plan_files(root: Path) -> list[str]:
    return plan_bundle(root).relative_files(root)


@pytest.fixture(scope="module")
def isolated_bundle(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("lambda-bundle")
    write_bundle(directory)
    return directory


def test_each_handler_imports_from_the_bundle_with_only_the_runtime_and_layer_packages(isolated_bundle):
    """python -S: no site processing, so neither the editable install of this repo nor torch/numpy can leak in."""
    site_packages = sysconfig.get_paths()["purelib"]
    probe = (
        "import sys\n"
        f"sys.path[:0] = [{str(isolated_bundle)!r}]\n"
        f"sys.path.append({site_packages!r})  # stands for the Lambda runtime (boto3) + the Powertools layer\n"
        "for blocked in ('torch', 'numpy', 'matplotlib', 'rich', 'moto'):\n"
        "    sys.modules[blocked] = None\n"
        "import importlib\n"
        f"for name in {HANDLERS!r}:\n"
        "    module = importlib.import_module(name)\n"
        "    assert callable(module.handler), name\n"
        "    assert module.__file__.startswith(sys.path[0]), (name, module.__file__)\n"
        "import contracts\n"
        "assert contracts.__file__.startswith(sys.path[0])\n"
        "assert 'model' not in sys.modules and 'debugger' not in sys.modules\n"
        "print('imported', len(sys.modules))\n"
    )
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "training-remediation",
        "POWERTOOLS_METRICS_NAMESPACE": "TrainingRemediation",
        "NOTIFICATION_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:topic",
        "JOB_NAME_PREFIX": "remediation",
    }
    result = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=300, env=environment, cwd="/"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("imported")


def test_the_asset_zip_cdk_would_upload_is_what_lambda_unpacks(synthesized, tmp_path):
    bundle = asset_directory(synthesized)
    archive = tmp_path / "code.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(bundle.rglob("*")):
            if path.is_file():
                zipped.write(path, path.relative_to(bundle).as_posix())
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
    assert {"lambdas/train_handler.py", "lambdas/__init__.py", "lambdas/remediation/__init__.py"} <= names


def test_a_handler_reaching_a_module_outside_runtime_and_layer_fails_the_bundle(tmp_path):
    (tmp_path / "lambdas").mkdir()
    (tmp_path / "lambdas" / "__init__.py").write_text("")
    (tmp_path / "lambdas" / "train_handler.py").write_text("from model import resnet\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("")
    (tmp_path / "model" / "resnet.py").write_text("import torch\n")
    with pytest.raises(BundleError) as raised:
        plan_bundle(tmp_path)
    message = str(raised.value)
    assert "lambdas/train_handler.py imports 'model'" in message
