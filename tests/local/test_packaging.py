"""The training source archive SageMaker script mode extracts and runs: a source directory with the debugger."""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest

from contracts.job import LAUNCHER_PROGRAM
from remediate.packaging import BUILTIN_EXAMPLE_DIR, FIXED_MTIME, SourceDirError, build_source_archive, check_source_dir


def test_archive_is_deterministic_and_holds_the_source_the_debugger_and_the_launcher(tmp_path):
    first = build_source_archive(tmp_path / "a" / "sourcedir.tar.gz")
    second = build_source_archive(tmp_path / "b" / "sourcedir.tar.gz")
    assert first.path.read_bytes() == second.path.read_bytes() and first.digest == second.digest
    assert first.label == "resnet"
    with tarfile.open(first.path) as archive:
        members = archive.getmembers()
        names = [member.name for member in members]
        assert names == sorted(names)
        assert {"train.py", "model/train.py", "debugger/__init__.py", "debugger/launcher.py", "contracts/job.py"} <= set(
            names
        )
        assert LAUNCHER_PROGRAM in names
        assert not any("__pycache__" in name for name in names)
        assert {member.mtime for member in members} == {FIXED_MTIME}
        assert {(member.uid, member.gid, member.uname) for member in members} == {(0, 0, "")}
        assert archive.extractfile("train.py").read() == (BUILTIN_EXAMPLE_DIR / "train.py").read_bytes()
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


def test_extracted_launcher_imports_the_packed_code_not_the_checkout(tmp_path):
    archive = build_source_archive(tmp_path / "sourcedir.tar.gz")
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
