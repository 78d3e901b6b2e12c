"""The training source archive SageMaker script mode extracts and runs: a source directory with the debugger."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from contracts.job import (
    ENTRY_POINT_HYPERPARAMETER,
    FAILURE_FILE_ENV,
    FALLBACK_PACKAGES_DIR,
    HOOK_CONFIG_HYPERPARAMETER,
    INPUT_CONFIG_DIR_ENV,
    LAUNCHER_PROGRAM,
    TENSORBOARD_CONFIG_FILE,
)
from remediate.packaging import (
    BUILTIN_EXAMPLE_DIR,
    BUILTIN_MODEL_DIR,
    FIXED_MTIME,
    SourceDirError,
    build_builtin_example_archive,
    build_source_archive,
    check_source_dir,
)


def test_archive_is_deterministic_and_holds_the_source_the_debugger_and_the_launcher(tmp_path):
    first = build_builtin_example_archive(tmp_path / "a" / "sourcedir.tar.gz")
    second = build_builtin_example_archive(tmp_path / "b" / "sourcedir.tar.gz")
    assert first.path.read_bytes() == second.path.read_bytes() and first.digest == second.digest
    assert first.label == "resnet"
    with tarfile.open(first.path) as archive:
        members = archive.getmembers()
        names = [member.name for member in members]
        assert names == sorted(names)
        assert {
            "train.py",
            "model/train.py",
            "debugger/__init__.py",
            "debugger/launcher.py",
            "contracts/job.py",
        } <= set(names)
        assert LAUNCHER_PROGRAM in names
        assert not any("__pycache__" in name for name in names)
        assert {member.mtime for member in members} == {FIXED_MTIME}
        assert {(member.uid, member.gid, member.uname) for member in members} == {(0, 0, "")}
        assert archive.extractfile("train.py").read() == (BUILTIN_EXAMPLE_DIR / "train.py").read_bytes()
        # the model package at the top of the project travels beside the example's entry point, which imports it
        assert archive.extractfile("model/resnet.py").read() == (BUILTIN_MODEL_DIR / "resnet.py").read_bytes()
    assert not list(first.path.parent.glob(".sourcedir*")), "no temporary file is left behind"


def test_a_users_directory_is_packed_as_it_is_without_caches(tmp_path):
    source = tmp_path / "my-script"
    (source / "src").mkdir(parents=True)
    (source / "src" / "train.py").write_text("print('hi')\n")
    (source / "requirements.txt").write_text("numpy\n")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref")
    archive = build_source_archive(tmp_path / "out.tar.gz", source, "src/train.py")
    assert archive.label == "my-script"
    with tarfile.open(archive.path) as opened:
        names = opened.getnames()
    assert "src/train.py" in names and "requirements.txt" in names and LAUNCHER_PROGRAM in names
    assert not [name for name in names if "__pycache__" in name or name.startswith(".git")]


@pytest.mark.parametrize(
    ("layout", "entry_point", "fragment"),
    [
        ({}, "train.py", "entry_point train.py: not found in source_dir"),
        ({"train.py": ""}, "../train.py", "without '..'"),
        ({"train.py": "", "debugger/__init__.py": ""}, "train.py", "holds debugger, which the job packs itself"),
        ({"train.py": "", "remediation_launcher.py": ""}, "train.py", "holds remediation_launcher.py"),
        ({"train.py": "", "remediation_fallback_packages/x.py": ""}, "train.py", "holds remediation_fallback_packages"),
    ],
)
def test_a_source_directory_that_cannot_work_is_refused_naming_why(tmp_path, layout, entry_point, fragment):
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(SourceDirError, match=fragment.replace("(", r"\(")):
        check_source_dir(tmp_path, entry_point)
    with pytest.raises(SourceDirError, match="no such directory"):
        check_source_dir(tmp_path / "absent", "train.py")
    (tmp_path / "file.py").write_text("")
    with pytest.raises(SourceDirError, match="is a file"):
        check_source_dir(tmp_path / "file.py", "train.py")


@pytest.mark.process
def test_extracted_launcher_imports_the_packed_code_not_the_checkout(tmp_path):
    archive = build_builtin_example_archive(tmp_path / "sourcedir.tar.gz")
    code = tmp_path / "code"
    with tarfile.open(archive.path) as opened:
        opened.extractall(code, filter="data")
    probe = "import model.train, debugger.launcher, contracts; print(model.train.__file__); print(debugger.launcher.__file__)"
    shown = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(code)!r}); {probe}"],
        cwd=code,
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(line.startswith(str(code)) for line in shown.stdout.split()), shown.stdout


TINY_SCRIPT = """
import tensorboardX
import torch
from torch import nn

import smdebug.pytorch as smd

print("tensorboardX", tensorboardX.__version__, "from", tensorboardX.__file__)
hook = smd.Hook.create_from_json_file()
model, loss_fn = nn.Linear(4, 2), nn.CrossEntropyLoss()
hook.register_module(model)
hook.register_loss(loss_fn)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    loss_fn(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
    optimizer.step()
hook.close()
"""


def image_without(site_packages: Path, missing: str, destination: Path) -> Path:
    """A site-packages like SageMaker's PyTorch image: everything installed here but ``missing`` (links, not copies)."""
    destination.mkdir()
    for entry in site_packages.iterdir():
        if not entry.name.lower().startswith(missing.lower()):
            (destination / entry.name).symlink_to(entry)
    return destination


def packed_tiny_job(tmp_path: Path) -> Path:
    """The extracted source archive of TINY_SCRIPT, as SageMaker unpacks it into /opt/ml/code."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "train.py").write_text(TINY_SCRIPT)
    archive = build_source_archive(tmp_path / "sourcedir.tar.gz", source)
    code = tmp_path / "code"
    with tarfile.open(archive.path) as opened:
        opened.extractall(code, filter="data")
    return code


def run_job(code: Path, tmp_path: Path, *interpreter_options: str, python_path: Path | None = None):
    """The launcher as SageMaker starts it (``python remediation_launcher.py --hyperparameters``), TensorBoard
    asked for through SageMaker's config file; (the finished process, the TensorBoard directory)."""
    config_dir = tmp_path / "input" / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    tensorboard_dir = tmp_path / "output" / "tensorboard"
    (config_dir / TENSORBOARD_CONFIG_FILE).write_text(
        json.dumps({"LocalPath": str(tensorboard_dir), "S3OutputPath": "s3://bucket/tensorboard/"})
    )
    hook_config = {"LocalPath": str(tmp_path / "debug"), "HookParameters": {"save_interval": "1"}}
    environment = {
        "PATH": "/usr/bin:/bin",
        INPUT_CONFIG_DIR_ENV: str(config_dir),
        FAILURE_FILE_ENV: str(tmp_path / "failure"),
    }
    if python_path is not None:
        environment["PYTHONPATH"] = str(python_path)  # after the script's directory, as an image's site-packages are
    job = subprocess.run(
        [
            sys.executable,
            *interpreter_options,
            LAUNCHER_PROGRAM,
            f"--{ENTRY_POINT_HYPERPARAMETER}",
            "train.py",
            f"--{HOOK_CONFIG_HYPERPARAMETER}",
            json.dumps(hook_config),
        ],  # fmt: skip
        cwd=code,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return job, tensorboard_dir


@pytest.mark.process
def test_a_job_on_an_image_without_tensorboardx_writes_tensorboard_files_with_the_packed_copy(tmp_path):
    """SageMaker's PyTorch images 2.11-2.13 install numpy, packaging and protobuf but not tensorboardX: the archive
    brings it, last on sys.path, so the job's TensorBoard files are written all the same."""
    code = packed_tiny_job(tmp_path)
    assert (code / FALLBACK_PACKAGES_DIR / "tensorboardX" / "writer.py").is_file()
    assert (code / FALLBACK_PACKAGES_DIR / "tensorboardx-2.6.5.dist-info" / "licenses" / "LICENSE").is_file()
    import torch

    image_site = image_without(Path(torch.__file__).parents[1], "tensorboardX", tmp_path / "image-site-packages")
    # -S: this environment's site-packages (which has tensorboardX) stays out; the image's stand-in is all there is
    job, tensorboard_dir = run_job(code, tmp_path, "-S", python_path=image_site)
    assert job.returncode == 0, job.stdout + job.stderr
    assert f"tensorboardX 2.6.5 from {code / FALLBACK_PACKAGES_DIR}" in job.stdout, job.stdout
    accumulator = EventAccumulator(str(tensorboard_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    assert [event.step for event in accumulator.Scalars("loss")] == [0, 1, 2]

    # Without the fallback directory the same job has no tensorboardX at all: the archive is what makes it work.
    shutil.rmtree(code / FALLBACK_PACKAGES_DIR)
    bare, _ = run_job(code, tmp_path, "-S", python_path=image_site)
    assert bare.returncode != 0 and "No module named 'tensorboardX'" in bare.stderr, bare.stderr


@pytest.mark.process
def test_an_installed_tensorboardx_wins_over_the_packed_copy(tmp_path):
    """An image's or a user's own tensorboardX (a requirements.txt the toolkit installed) comes first."""
    code = packed_tiny_job(tmp_path)
    job, _ = run_job(code, tmp_path)
    assert job.returncode == 0, job.stdout + job.stderr
    shown = next(line for line in job.stdout.splitlines() if line.startswith("tensorboardX"))
    assert FALLBACK_PACKAGES_DIR not in shown and "site-packages" in shown, shown
