"""The README's commands work as written on a fresh checkout.

Fast: every Python command it gives runs in the project's environment (`.venv/bin/python`, which `make` creates:
scikit-learn and torch are not in a bare `python`); the CPU install line asks for the release requirements.txt pins,
as PyTorch's CPU build; the notebook command is the one the notebook tests run, with the notebook's own per-cell
limit. Marked `install`: a fresh copy of the checkout gets its `.venv` as `make` makes it and runs the README's
commands that need no AWS account and train for seconds, exactly as written; and the CPU install line, with
PyTorch's CPU index unreachable, stops with a clear error instead of resolving PyPI's CUDA build."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: The README's commands this file runs from a fresh checkout (marked install); every other `.venv/bin/` command
#: must match NOT_RUN_HERE, with the reason, so a new command is either run here or its reason stated.
RUN_HERE = (
    r"^\.venv/bin/python examples/(mlp|xgboost)/make_data\.py ",
    r"^\.venv/bin/remediate local run --run-spec examples/(xgboost|plain)/run_spec\.json ",
)
NOT_RUN_HERE = {
    r"^\.venv/bin/remediate cloud ": "needs an AWS account and a deployed stack",
    r"^\.venv/bin/remediate local run --run-spec my_run_spec\.json ": "a placeholder for the user's own files",
    r"^\.venv/bin/tensorboard --logdir ": "starts a server (the figure's tests read the same files with its reader)",
    r"^\.venv/bin/python -m pip install -r requirements-dev\.txt": "installs the dev set (make test does)",
    r"^\.venv/bin/python -m pytest --nbmake ": "trains for minutes: tests/notebooks runs it (marked training)",
    r"^(time )?\.venv/bin/python bench/": "benchmarks of minutes (tests/bench covers their parts)",
    r".* \.\.\.$": "the form of a command, its options left out",
}


def readme_commands() -> list[str]:
    """The README's shell commands: the lines of its indented and fenced code blocks (a trailing backslash joins the
    next line; a '#' comment is cut) and its inline code spans that start with a command."""
    text = README.read_text()
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            lines.append(line.strip())
    commands, pending = [], ""
    for line in lines:
        line = pending + line
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        command = re.sub(r"\s+#\s.*$", "", line).strip()
        if command:
            commands.append(command)
    commands += re.findall(r"`((?:time )?(?:\.venv/bin/[^\s`]+|python3?|pip|make) [^`]+)`", text)
    return commands


def venv_commands() -> list[str]:
    return [command for command in readme_commands() if re.match(r"^(time )?\.venv/bin/", command)]


def requirements_pin(name: str) -> str:
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.partition("==")[2]
    raise AssertionError(f"requirements.txt pins no {name}")


def cpu_install_line() -> str:
    (line,) = [command for command in readme_commands() if command.startswith("pip install") and CPU_INDEX in command]
    return line


# ---------------------------------------------------------------------------------------------------- fast


def test_every_python_command_runs_in_the_projects_environment():
    bare = [command for command in readme_commands() if re.match(r"^(time )?python3? ", command)]
    assert bare == [], "a bare `python` lacks the project's packages (scikit-learn, torch): use .venv/bin/python"
    assert any(command.startswith(".venv/bin/python examples/xgboost/make_data.py") for command in venv_commands())


def test_every_venv_command_is_run_here_or_says_why_not():
    unclassified = [
        command for command in venv_commands()
        if not any(re.match(pattern, command) for pattern in (*RUN_HERE, *NOT_RUN_HERE))
    ]  # fmt: skip
    assert unclassified == []
    for pattern in RUN_HERE:
        assert any(re.match(pattern, command) for command in venv_commands()), pattern


def test_the_cpu_install_line_asks_for_the_tested_release_as_pytorchs_cpu_build():
    pin = requirements_pin("torch")
    line = cpu_install_line()
    assert f'"torch=={pin}+cpu"' in line.split() and "." in line.split()
    # pyproject declares the release the project is tested with, not any later one
    pyproject = (REPO / "pyproject.toml").read_text()
    (declared,) = [Requirement(spec) for spec in re.findall(r'^\s*"(torch[^"]*)"', pyproject, re.MULTILINE)]
    major, minor, _ = pin.split(".")
    assert declared.specifier.contains(pin) and declared.specifier.contains(f"{pin}+cpu")
    assert not declared.specifier.contains(f"{major}.{int(minor) + 1}.0"), f"{declared} admits an untested release"


def test_the_notebook_command_is_the_notebook_tests_own_with_the_notebooks_own_cell_limit():
    sys.path.insert(0, str(REPO / "tests" / "notebooks"))
    try:
        from notebook_runs import NBMAKE_ARGUMENTS, cell_timeout
    finally:
        sys.path.pop(0)
    commands = [command for command in venv_commands() if "--nbmake" in command]
    assert commands
    for command in commands:
        *arguments, notebook = command.split()
        assert arguments == [".venv/bin/python", *NBMAKE_ARGUMENTS], command  # no timeout of its own
        assert cell_timeout(REPO / notebook) >= 300  # nbmake's default, too little on a loaded machine


# ---------------------------------------------------------------------------------------------------- install


def run(command: list[str] | str, cwd: Path, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          shell=isinstance(command, str), executable="/bin/bash" if isinstance(command, str) else None)  # fmt: skip


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A fresh copy of the checkout (what a clone holds, with this working tree's changes), and its `.venv` as `make`
    makes it: the package installed editable without dependencies, which come from this environment's site-packages
    (a path entry, so the tests take seconds instead of reinstalling PyTorch)."""
    copy = tmp_path_factory.mktemp("fresh") / "checkout"
    tracked = run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO).stdout.split("\n")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    assert run([sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=copy).returncode == 0
    python = copy / ".venv" / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=copy).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                     "--no-build-isolation", "-e", "."], cwd=copy)  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    return copy


@pytest.mark.install
def test_the_readme_commands_run_as_written_in_a_fresh_checkout(checkout):
    for pattern in RUN_HERE:
        for command in [command for command in venv_commands() if re.match(pattern, command)]:
            done = run(command, cwd=checkout)
            assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            assert "Traceback" not in done.stderr, command
    assert (checkout / "data" / "xgboost" / "train").is_dir() and (checkout / "data" / "mlp" / "train").is_dir()
    summaries = [json.loads(path.read_text()) for path in checkout.glob("runs/*/summary.json")]
    # the XGBoost example and the plain PyTorch script meet their objectives, as the README says
    assert len(summaries) == 2 and all(summary["successful_job"] for summary in summaries)


@pytest.mark.install
def test_the_cpu_install_line_stops_clearly_where_pytorchs_cpu_index_cannot_be_reached(checkout, tmp_path):
    """pip's resolver on the README's line, PyTorch's CPU index replaced by an address nothing answers: no fallback
    to PyPI's torch (a CUDA build with its nvidia packages), but pip's own error naming the CPU build."""
    line = cpu_install_line().replace(CPU_INDEX, "http://127.0.0.1:9/whl/cpu")
    arguments = line.split()
    assert arguments[:2] == ["pip", "install"]
    report = tmp_path / "report.json"
    # pip as a user runs it: no configuration files (this machine's local wheel directory would supply the CPU build)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", str(report),
               "--retries", "0", "--timeout", "10", *[argument.strip('"') for argument in arguments[2:]]]  # fmt: skip
    done = run(command, cwd=checkout, env=env)
    assert done.returncode != 0, done.stdout[-3000:]
    assert f"No matching distribution found for torch=={requirements_pin('torch')}+cpu" in done.stderr, done.stderr[-3000:]
    assert not report.exists()
