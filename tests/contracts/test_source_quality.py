import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO_ROOT)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_tracked_file_holds_merge_conflict_markers():
    """A merge committed with its conflict markers broke the Makefile once; ruff reads only Python."""
    listed = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=REPO_ROOT, check=True).stdout
    marked = []
    for name in filter(None, listed.decode().split("\0")):
        path = REPO_ROOT / name
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        lines = path.read_bytes().splitlines()
        if any(line.startswith((b"<<<<<<< ", b">>>>>>> ")) for line in lines):
            marked.append(name)
    assert marked == []


def test_lambda_side_modules_import_without_torch_or_numpy():
    probe = (
        "import sys\n"
        "import lambdas.train_handler, lambdas.monitor_handler, lambdas.plan_handler\n"
        "import contracts.debugger_config, contracts.rule_status, contracts.progress_log, contracts.remedies\n"
        "heavy = sorted(name for name in ('torch', 'numpy') if name in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr


def _imported_top_level_modules(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return modules


def test_the_contracts_package_imports_only_the_standard_library():
    """It is carried by the Lambda bundle, the training job and the local runtime alike."""
    offenders = {
        str(path.relative_to(REPO_ROOT)): sorted(
            module
            for module in _imported_top_level_modules(path)
            if module not in sys.stdlib_module_names and module not in ("contracts", "__future__")
        )
        for path in (REPO_ROOT / "contracts").rglob("*.py")
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}
    assert len(offenders) >= 8


def test_the_workflow_the_stack_and_the_local_runtime_never_import_the_example_or_the_job_side():
    """lambdas/, infra/ and local_runtime/ share shapes through contracts only: no model code, no torch."""
    forbidden = {"model", "examples", "debugger", "smdebug", "torch", "numpy"}
    offenders = {}
    for package in ("lambdas", "infra", "local_runtime"):
        for path in (REPO_ROOT / package).rglob("*.py"):
            found = _imported_top_level_modules(path) & forbidden
            if found:
                offenders[str(path.relative_to(REPO_ROOT))] = sorted(found)
    assert offenders == {}
