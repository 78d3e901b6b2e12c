"""The Lambda code asset, bundled on this machine without Docker.

The bundle holds the whole ``lambdas`` package plus the modules of ``model`` and
``debugger`` that the handlers import, found by following their import
statements. Those two packages get an empty package marker instead of their own
``__init__.py`` so that importing ``model.hyperparameters`` never pulls in torch.
Third-party code (Powertools, pydantic, aws-xray-sdk) comes from the Powertools
layer and boto3 from the Lambda runtime; anything else reached from a handler
fails the synth with the module and the import chain named.
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
#: First-party packages whose reached modules are copied one by one.
SHARED_PACKAGES = ("model", "debugger")
#: Provided at run time: boto3/botocore by the Lambda runtime, the rest by the Powertools layer.
RUNTIME_PROVIDED = frozenset(
    {"boto3", "botocore", "aws_lambda_powertools", "pydantic", "pydantic_core", "aws_xray_sdk", "typing_extensions"}
)

PACKAGE_MARKER = '"""Package marker written by the Lambda bundler: only the torch-free modules are bundled."""\n'


class BundleError(RuntimeError):
    """The handlers reach a module that cannot go into the Lambda bundle."""


@dataclass(frozen=True)
class BundlePlan:
    handler_files: tuple[Path, ...]
    shared_modules: tuple[str, ...]  # dotted names, e.g. "model.hyperparameters"

    def relative_files(self, root: Path = REPO_ROOT) -> list[str]:
        files = [str(path.relative_to(root)) for path in self.handler_files]
        files += [module.replace(".", "/") + ".py" for module in self.shared_modules]
        files += [f"{package}/__init__.py" for package in sorted({m.split(".")[0] for m in self.shared_modules})]
        return sorted(set(files))


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


def _module_file(module: str, root: Path) -> Path | None:
    candidate = root.joinpath(*module.split(".")).with_suffix(".py")
    if candidate.is_file():
        return candidate
    package_init = root.joinpath(*module.split("."), "__init__.py")
    return package_init if package_init.is_file() else None


def plan_bundle(root: Path = REPO_ROOT) -> BundlePlan:
    """Which files go into the bundle; raises BundleError naming any module the Lambda runtime cannot provide."""
    handler_root = root / HANDLER_PACKAGE
    if not handler_root.is_dir():
        raise BundleError(f"no '{HANDLER_PACKAGE}' package under {root}")
    handler_files = tuple(
        sorted(
            path
            for package in (HANDLER_PACKAGE, CONTRACTS_PACKAGE)
            for path in (root / package).rglob("*.py")
            if "__pycache__" not in path.parts
        )
    )
    shared: set[str] = set()
    queue: list[tuple[Path, str]] = [(path, str(path.relative_to(root))) for path in handler_files]
    seen_files: set[Path] = set(handler_files)
    while queue:
        source_file, chain = queue.pop()
        for module in sorted(_imported_modules(source_file)):
            top = module.split(".")[0]
            if (
                top in (HANDLER_PACKAGE, CONTRACTS_PACKAGE)
                or top in RUNTIME_PROVIDED
                or top in sys.stdlib_module_names
                or top == "__future__"
            ):
                continue
            if top not in SHARED_PACKAGES:
                raise BundleError(
                    f"{chain} imports '{module}', which neither the Lambda runtime nor the Powertools layer provides; "
                    f"keep the handlers' imports to the standard library, boto3, Powertools, pydantic and the torch-free "
                    f"modules of {', '.join(SHARED_PACKAGES)}"
                )
            if module == top:
                continue  # the package itself: replaced by a marker
            module_file = _module_file(module, root)
            if module_file is None:
                # "from model.hyperparameters import TrainingHyperparameters": a name, not a module
                continue
            if module_file.name == "__init__.py":
                raise BundleError(f"{chain} imports the package '{module}'; import its modules one by one instead")
            shared.add(module)
            if module_file not in seen_files:
                seen_files.add(module_file)
                queue.append((module_file, f"{chain} -> {module}"))
    return BundlePlan(handler_files=handler_files, shared_modules=tuple(sorted(shared)))


def write_bundle(output_dir: Path, root: Path = REPO_ROOT) -> BundlePlan:
    plan = plan_bundle(root)
    for path in plan.handler_files:
        destination = output_dir / path.relative_to(root)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    for module in plan.shared_modules:
        relative = Path(*module.split(".")).with_suffix(".py")
        destination = output_dir / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / relative, destination)
        marker = output_dir / relative.parts[0] / "__init__.py"
        if not marker.exists():
            marker.write_text(PACKAGE_MARKER, encoding="utf-8")
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
