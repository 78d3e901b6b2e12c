"""The training source archive SageMaker script mode extracts and runs."""

from __future__ import annotations

import subprocess
import sys
import tarfile

from remediate.packaging import FIXED_MTIME, build_source_archive


def test_archive_is_deterministic_and_holds_the_packages_and_entry_point(tmp_path):
    first = build_source_archive(tmp_path / "a" / "sourcedir.tar.gz")
    second = build_source_archive(tmp_path / "b" / "sourcedir.tar.gz")
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as archive:
        members = archive.getmembers()
        names = [member.name for member in members]
        assert names == sorted(names)
        assert "train.py" in names and "model/train.py" in names and "debugger/__init__.py" in names
        assert all(name.endswith(".py") for name in names)
        assert not any("__pycache__" in name for name in names)
        assert {member.mtime for member in members} == {FIXED_MTIME}
        assert {(member.uid, member.gid, member.uname) for member in members} == {(0, 0, "")}
        assert archive.extractfile("train.py").read().decode() == (
            "from model.train import process_main\n\nprocess_main()\n"
        )
    assert not list(first.parent.glob(".sourcedir*")), "no temporary file is left behind"


def test_extracted_entry_point_imports_the_packed_code_not_the_checkout(tmp_path):
    archive = build_source_archive(tmp_path / "sourcedir.tar.gz")
    code = tmp_path / "code"
    with tarfile.open(archive) as opened:
        opened.extractall(code, filter="data")
    probe = "import model.train, debugger; print(model.train.__file__); print(debugger.__file__)"
    shown = subprocess.run([sys.executable, "-c", probe], cwd=code, capture_output=True, text=True, check=True)
    assert all(line.startswith(str(code)) for line in shown.stdout.split()), shown.stdout
