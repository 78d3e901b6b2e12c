"""The Lambda code asset, bundled on this machine without Docker.

The bundle holds the ``lambdas`` package and the ``contracts`` package (the
shapes the workflow shares with the training job; standard library only).
Third-party code (Powertools, pydantic, aws-xray-sdk) comes from the Powertools
layer and boto3 from the Lambda runtime. The handlers' imports are followed: a
handler that reaches anything else (the example's model code, the debugger,
torch) fails the synth with the module and the import chain named.
"""

from __future__ import annotations

import ast
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling

REPO_ROOT = Path(__file__).resolve().parent.parent

HANDLER_PACKAGE = "lambdas"
#: The standard-library-only contracts package both sides share: copied whole.
CONTRACTS_PACKAGE = "contracts"
#: Provided at run time: boto3/botocore by the Lambda runtime, the rest by the Powertools layer.
RUNTIME_PROVIDED = frozenset(
    {"boto3", "botocore", "aws_lambda_powertools", "pydantic", "pydantic_core", "aws_xray_sdk", "typing_extensions"}
)


class BundleError(RuntimeError):
    """The handlers reach a module that cannot go into the Lambda bundle."""


@dataclass(frozen=True)
class BundlePlan:
    files: tuple[Path, ...]

    def relative_files(self, root: Path = REPO_ROOT) -> list[str]:
        return sorted(str(path.relative_to(root)) for path in self.files)


def _imported_modules(source_file: Path) -> set[str]:
    tree = ast.parse(source_file.read_text(encoding="utf-8"), filename=str(source_file))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
            # "from model import hyperparameters" imports the submodule model.hyperparameters
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def plan_bundle(root: Path = REPO_ROOT) -> BundlePlan:
    """Which files go into the bundle; raises BundleError naming any module the Lambda runtime cannot provide."""
    handler_root = root / HANDLER_PACKAGE
    if not handler_root.is_dir():
        raise BundleError(f"no '{HANDLER_PACKAGE}' package under {root}")
    files = tuple(
        sorted(
            path
            for package in (HANDLER_PACKAGE, CONTRACTS_PACKAGE)
            for path in (root / package).rglob("*.py")
            if "__pycache__" not in path.parts
        )
    )
    for source_file in files:
        chain = str(source_file.relative_to(root))
        for module in sorted(_imported_modules(source_file)):
            top = module.split(".")[0]
            if top in (HANDLER_PACKAGE, CONTRACTS_PACKAGE, "__future__") or top in RUNTIME_PROVIDED:
                continue
            if top in sys.stdlib_module_names:
                continue
            raise BundleError(
                f"{chain} imports '{module}', which neither the Lambda runtime nor the Powertools layer provides; "
                f"keep the handlers' imports to the standard library, boto3, Powertools, pydantic and the "
                f"'{CONTRACTS_PACKAGE}' package"
            )
    return BundlePlan(files=files)


def write_bundle(output_dir: Path, root: Path = REPO_ROOT) -> BundlePlan:
    plan = plan_bundle(root)
    for path in plan.files:
        destination = output_dir / path.relative_to(root)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return plan


@jsii.implements(ILocalBundling)
class LocalHandlerBundling:
    """CDK calls try_bundle before it would start Docker; we always bundle here."""

    def __init__(self, root: Path = REPO_ROOT):
        self._root = root

    def try_bundle(self, output_dir: str, *args, **kwargs) -> bool:
        write_bundle(Path(output_dir), self._root)
        return True


def handler_bundling_options(root: Path = REPO_ROOT) -> BundlingOptions:
    return BundlingOptions(
        # Never pulled: LocalHandlerBundling always succeeds, so no Docker is needed.
        image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.13"),
        local=LocalHandlerBundling(root),
    )
