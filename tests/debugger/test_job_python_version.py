"""The packages packed beside a user's script (contracts/, debugger/, smdebug/) run on the oldest Python a job's
image has: SageMaker's XGBoost images run Python 3.10 (aws/sagemaker-xgboost-container, docker/*/base/Dockerfile.cpu:
PYTHON_VERSION=3.10), while the PyTorch images and this machine have newer ones. A module-level `from datetime import
UTC` (3.11+) broke every XGBoost job in the cloud before its first round."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from remediate.packaging import JOB_PACKAGES, job_package_files

REPO = Path(__file__).resolve().parents[2]
OLDEST_JOB_PYTHON = "py310"
#: Standard-library names added in 3.11 or later that a job package could reach for.
NEWER_NAMES = {
    ("datetime", "UTC"), ("typing", "Self"), ("typing", "LiteralString"), ("typing", "Never"),
    ("typing", "assert_type"), ("typing", "reveal_type"), ("typing", "NotRequired"), ("typing", "Required"),
    ("enum", "StrEnum"), ("enum", "verify"), ("asyncio", "TaskGroup"), ("asyncio", "timeout"),
    ("contextlib", "chdir"), ("hashlib", "file_digest"), ("operator", "call"),
}  # fmt: skip
NEWER_MODULES = {"tomllib", "wsgiref.types"}


def test_the_job_packages_parse_as_python_3_10():
    """ruff reports syntax a target version lacks (except*, type aliases, ...) whatever rules are selected."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--target-version", OLDEST_JOB_PYTHON, "--select", "F821",
         *(str(REPO / package) for package in JOB_PACKAGES)],  # fmt: skip
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_job_packages_use_no_standard_library_name_newer_than_3_10():
    found = []
    for archive_name, path in job_package_files(REPO):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}  # "dt" -> "datetime" for `import datetime as dt`
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    aliases[alias.asname or alias.name] = alias.name
                    if alias.name in NEWER_MODULES:
                        found.append(f"{archive_name}:{node.lineno} import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module in NEWER_MODULES:
                    found.append(f"{archive_name}:{node.lineno} from {node.module}")
                found += [
                    f"{archive_name}:{node.lineno} from {node.module} import {alias.name}"
                    for alias in node.names
                    if (node.module, alias.name) in NEWER_NAMES
                ]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                module = aliases.get(node.value.id)
                if (module, node.attr) in NEWER_NAMES:
                    found.append(f"{archive_name}:{node.lineno} {node.value.id}.{node.attr}")
    assert found == [], "3.11+ names in the job packages (SageMaker's XGBoost images run Python 3.10): " + "; ".join(found)
