"""`pip install .` gives a working `remediate` anywhere: the wheel is built from the working tree, installed
into a fresh virtual environment without its dependencies (they come from this environment's site-packages,
already at the pinned versions, so the test takes seconds instead of reinstalling PyTorch), and the installed
CLI runs from outside the checkout: --version, and the built-in example's own check tool, which proves the
example's source ships with the package. pip check then holds the declared dependencies against what is
installed, and every declared range admits the version requirements.txt pins."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.install

REPO = Path(__file__).resolve().parents[2]


def run(*command: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def pinned(requirements: str = "requirements.txt") -> dict[str, str]:
    pins = {}
    for line in (REPO / requirements).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-")):
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The fresh environment's python, with the package built from the working tree installed into it."""
    work = tmp_path_factory.mktemp("install")
    tracked = run("git", "ls-files", "-co", "--exclude-standard", cwd=REPO).stdout.split()
    source = work / "source"
    for name in tracked:  # the working tree as a user's checkout has it (no build/ or egg-info left in ours)
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), str(source), cwd=work)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (work / "dist").glob("training_remediation-*.whl")
    fresh = work / "fresh"
    assert run(sys.executable, "-m", "venv", "--without-pip", str(fresh), cwd=work).returncode == 0
    python = fresh / "bin" / "python"
    done = run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel), cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    # The dependencies: this environment's site-packages, after the fresh one (a plain path entry: the
    # checkout's editable-install hook in it, a .pth file, is not run from there).
    fresh_site = Path(run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=work).stdout.strip())
    (fresh_site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_installed_cli_runs_from_anywhere(installed, tmp_path):
    remediate = installed.parent / "remediate"
    version = run(str(remediate), "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"remediate {metadata.version('training-remediation')}"
    where = run(str(installed), "-c", "import json, remediate, local_runtime.shipped as s; print(json.dumps("
                "[remediate.__file__, str(s.BUILTIN_EXAMPLE_DIR), str(s.BUILTIN_MODEL_DIR), str(s.ASL_PATH)]))",
                cwd=tmp_path)  # fmt: skip
    module, example, model, asl = json.loads(where.stdout)
    prefix = str(installed.parent.parent)
    assert all(path.startswith(prefix) for path in (module, example, model, asl)), where.stdout
    assert Path(example, "train.py").is_file() and Path(model, "data.py").is_file() and Path(asl).is_file()
    # The example's own hyperparameter check runs from the installed copy: bad input, exit 2, its message.
    refused = run(str(remediate), "local", "run", "--hyperparameters", "depth=21", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "hyperparameter 'depth': must be 6n+2" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "runs").exists()
    bare = run(str(remediate), cwd=tmp_path)
    assert bare.returncode == 0 and "usage: remediate" in bare.stdout


def test_declared_dependencies_are_installed_and_match_the_pins(installed, tmp_path):
    checked = run(sys.executable, "-m", "pip", "--python", str(installed), "check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (dist_info,) = Path(run(str(installed), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                            cwd=tmp_path).stdout.strip()).glob("training_remediation-*.dist-info")
    declared = [Requirement(value) for value in Parser().parsestr((dist_info / "METADATA").read_text()).get_all("Requires-Dist")]
    pins, extra_pins = pinned(), {"hf": pinned("requirements-hf.txt")}
    assert {requirement.name.lower() for requirement in declared} >= {"boto3", "moto", "pydantic", "rich", "numpy", "torch"}
    for requirement in declared:
        name = requirement.name.lower().replace("_", "-")
        # an optional extra's dependencies are pinned in its own requirements file (pyproject: [hf])
        extra = next((extra for extra in extra_pins if requirement.marker and requirement.marker.evaluate({"extra": extra})), None)
        if extra is not None:
            assert name in extra_pins[extra], f"{requirement} is declared for [{extra}] but requirements-{extra}.txt does not pin it"
            assert requirement.specifier.contains(extra_pins[extra][name]), f"{requirement} excludes the pinned {extra_pins[extra][name]}"
            continue
        assert name in pins, f"{requirement} is declared but requirements.txt does not pin it"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{requirement} excludes the pinned {pins[name]}"
        for extra in requirement.extras:  # the extra's own dependencies are pinned too
            for needed in metadata.requires(requirement.name) or []:
                needed_requirement = Requirement(needed)
                if needed_requirement.marker and needed_requirement.marker.evaluate({"extra": extra}):
                    assert needed_requirement.name.lower().replace("_", "-") in pins, f"{requirement}: {needed} not pinned"


def test_without_a_gpu_the_cpu_build_of_pytorch_is_installed():
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has an NVIDIA GPU: the CUDA build is the right one")
    assert metadata.version("torch").endswith("+cpu"), metadata.version("torch")
    assert not [name for name in (d.metadata["Name"] or "" for d in metadata.distributions()) if name.startswith("nvidia-")]


def test_the_wheel_ships_the_example_and_the_state_machine(installed):
    wheel = next(installed.parent.parent.parent.glob("dist/*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "local_runtime/_shipped/statemachine/remediation.asl.json" in names
    assert "local_runtime/_shipped/examples/resnet/train.py" in names
    assert "local_runtime/_shipped/model/hyperparameters.py" in names
    assert not [name for name in names if "__pycache__" in name]
