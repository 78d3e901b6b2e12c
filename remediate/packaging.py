"""The training source archive SageMaker script mode runs: model/, debugger/ and a root train.py.

Deterministic (sorted entries, fixed mtimes, no owner names), so the same tree
always gives the same bytes and the same asset hash in the CDK stack.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from contracts.atomic_files import write_atomically

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("contracts", "model", "debugger")
ENTRY_POINT = "train.py"
ENTRY_POINT_SOURCE = "from model.train import process_main\n\nprocess_main()\n"
#: 1980-01-01, the earliest time every archive format and zip tool accepts.
FIXED_MTIME = 315532800


def source_files(root: Path = PROJECT_ROOT) -> list[tuple[str, Path]]:
    """(archive name, file) for every Python file of the packed packages, sorted."""
    files = []
    for package in PACKAGES:
        package_dir = root / package
        if not (package_dir / "__init__.py").is_file():
            raise FileNotFoundError(f"package {package!r} not found at {package_dir} (needs __init__.py)")
        for path in package_dir.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            files.append((path.relative_to(root).as_posix(), path))
    return sorted(files)


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = FIXED_MTIME
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    archive.addfile(info, io.BytesIO(data))


def build_source_archive(destination: Path, root: Path = PROJECT_ROOT) -> Path:
    """Write the tar.gz to ``destination`` (atomically) and return its path."""
    destination = Path(destination)
    entries = [(ENTRY_POINT, ENTRY_POINT_SOURCE.encode())]
    entries += [(name, path.read_bytes()) for name, path in source_files(root)]
    entries.sort(key=lambda entry: entry[0])

    def write(raw) -> None:
        # gzip's header carries an mtime and a file name: fix both.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=FIXED_MTIME, compresslevel=9) as zipped:
            with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
                for name, data in entries:
                    _add_bytes(archive, name, data)

    write_atomically(destination, write)
    return destination
