"""The training source archive SageMaker script mode runs: a source directory with our debugger beside it.

    sourcedir.tar.gz
      remediation_launcher.py     the job launcher (sagemaker_program): sets the debugger up, runs the entry point
      contracts/ debugger/ smdebug/   the in-job debugger and its smdebug-compatible surface
      remediation_fallback_packages/  tensorboardX, which SageMaker's PyTorch images lack; last on sys.path
      train.py, ...               the user's source directory, as it is

Deterministic (sorted entries, fixed mtimes, no owner names), so the same tree
always gives the same bytes, the same digest and the same S3 key.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
import re
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contracts.atomic_files import write_atomically
from contracts.job import FALLBACK_PACKAGES_DIR, LAUNCHER_PROGRAM
from contracts.run_spec import check_entry_point
from local_runtime.shipped import BUILTIN_EXAMPLE_DIR, BUILTIN_MODEL_DIR

#: Where the job packages (contracts/, debugger/) are: the checkout, or site-packages once installed.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: What is packed beside every source directory.
JOB_PACKAGES = ("contracts", "debugger", "smdebug")
#: The built-in example's entry point (examples/resnet/train.py) imports the model package at the top of the project:
#: its archive carries that package beside the entry point, as a user's source directory carries its own code.
BUILTIN_EXAMPLE_PACKAGES = (BUILTIN_MODEL_DIR,)
#: Installed distributions packed, as installed here, into FALLBACK_PACKAGES_DIR: (distribution, import name).
#: tensorboardX writes the TensorBoard files (debugger/storage/tensorboard_events.py); its own dependencies (numpy,
#: packaging, protobuf>=3.20) are in SageMaker's PyTorch images (aws/deep-learning-containers,
#: docker/pytorch/2.1{1,2,3}/cpu/uv.lock: protobuf 6.33.6), tensorboardX is not.
FALLBACK_DISTRIBUTIONS = (("tensorboardX", "tensorboardX"),)
LAUNCHER_SOURCE = (
    '"""SageMaker runs this first (sagemaker_program): see debugger/launcher.py."""\n'
    "from pathlib import Path\n\n"
    "from debugger.launcher import main\n\n"
    "main(Path(__file__).resolve().parent)\n"
)
#: Never packed from a user's directory: caches, version control, virtual environments.
SKIPPED_PARTS = frozenset(
    {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ipynb_checkpoints"}
)
SKIPPED_SUFFIXES = (".pyc", ".pyo")
#: 1980-01-01, the earliest time every archive format and zip tool accepts.
FIXED_MTIME = 315532800
_NAME = re.compile(r"[^a-z0-9-]+")


class SourceDirError(ValueError):
    """The source directory cannot be packed; the message names the path and the fix."""


@dataclass(frozen=True)
class SourceArchive:
    path: Path
    digest: str  # sha256 of the archive's bytes
    label: str  # a short name from the source directory, for the S3 key


def job_package_files(root: Path = PROJECT_ROOT) -> list[tuple[str, Path]]:
    """(archive name, file) for every Python file of the packages packed beside the user's source."""
    files = []
    for package in JOB_PACKAGES:
        package_dir = root / package
        if not (package_dir / "__init__.py").is_file():
            raise FileNotFoundError(f"package {package!r} not found at {package_dir} (needs __init__.py)")
        for path in package_dir.rglob("*.py"):
            if "__pycache__" not in path.parts:
                files.append((path.relative_to(root).as_posix(), path))
    return sorted(files)


def fallback_package_files() -> list[tuple[str, Path]]:
    """(archive name, file) for the fallback packages as installed in this environment: their Python files and
    the distribution's metadata and licence (so ``importlib.metadata`` sees the version, and the licence travels)."""
    files = []
    for distribution_name, import_name in FALLBACK_DISTRIBUTIONS:
        spec = importlib.util.find_spec(import_name)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"{import_name} is not installed here but every job packs it: pip install -r requirements.txt"
            )
        package_dir = Path(next(iter(spec.submodule_search_locations)))
        for path in package_dir.rglob("*.py"):
            if "__pycache__" not in path.parts:
                name = f"{import_name}/{path.relative_to(package_dir).as_posix()}"
                files.append((f"{FALLBACK_PACKAGES_DIR}/{name}", path))
        distribution = importlib.metadata.distribution(distribution_name)
        for record in distribution.files or ():
            parts = record.parts
            if parts[0].endswith(".dist-info") and (parts[-1] in ("METADATA", "top_level.txt") or "licenses" in parts):
                files.append((f"{FALLBACK_PACKAGES_DIR}/{record.as_posix()}", Path(str(record.locate()))))
    return sorted(files)


def source_dir_files(source_dir: Path) -> list[tuple[str, Path]]:
    """(archive name, file) of the user's source directory, sorted; caches and version control left out."""
    files = []
    for path in source_dir.rglob("*"):
        relative = path.relative_to(source_dir)
        if any(part in SKIPPED_PARTS for part in relative.parts) or path.suffix in SKIPPED_SUFFIXES:
            continue
        if path.is_file():
            files.append((relative.as_posix(), path))
    return sorted(files)


def check_source_dir(source_dir: Path, entry_point: str, field: str = "source_dir") -> Path:
    """The directory, resolved; SourceDirError naming what is wrong (missing, not a directory, no entry point,
    a name that would shadow the packed debugger)."""
    source_dir = Path(source_dir)
    if not source_dir.exists():
        raise SourceDirError(f"{field} {source_dir}: no such directory")
    if not source_dir.is_dir():
        raise SourceDirError(f"{field} {source_dir}: is a file; give the directory that holds the training script")
    try:
        check_entry_point(entry_point)
    except ValueError as error:
        raise SourceDirError(f"entry_point: {error}") from None
    if not (source_dir / entry_point).is_file():
        scripts = sorted(path.name for path in source_dir.glob("*.py"))[:10]
        raise SourceDirError(
            f"entry_point {entry_point}: not found in {field} {source_dir} (Python files there: "
            f"{', '.join(scripts) or 'none'})"
        )
    clashes = [
        name for name in (*JOB_PACKAGES, LAUNCHER_PROGRAM, FALLBACK_PACKAGES_DIR) if (source_dir / name).exists()
    ]
    if clashes:
        raise SourceDirError(
            f"{field} {source_dir}: holds {', '.join(clashes)}, which the job packs itself (the in-job debugger); "
            "rename yours"
        )
    return source_dir.resolve()


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = FIXED_MTIME
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    archive.addfile(info, io.BytesIO(data))


def build_source_archive(
    destination: Path, source_dir: Path, entry_point: str = "train.py", packages: Sequence[Path] = ()
) -> SourceArchive:
    """Write the tar.gz of ``source_dir`` plus the job packages (and ``packages``, each under its own name) to
    ``destination`` (atomically)."""
    source_dir = check_source_dir(source_dir, entry_point)
    destination = Path(destination)
    entries = [(LAUNCHER_PROGRAM, LAUNCHER_SOURCE.encode())]
    entries += [(name, path.read_bytes()) for name, path in job_package_files()]
    entries += [(name, path.read_bytes()) for name, path in fallback_package_files()]
    entries += [(name, path.read_bytes()) for name, path in source_dir_files(source_dir)]
    for package in packages:
        entries += [(f"{package.name}/{name}", path.read_bytes()) for name, path in source_dir_files(package)]
    entries.sort(key=lambda entry: entry[0])

    def write(raw) -> None:
        # gzip's header carries an mtime and a file name: fix both. Level 6 (gzip's own default): level 9 took twice
        # the CPU (77 against 38 ms for the built-in example's archive, packed at every run) for 0.7% fewer bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=FIXED_MTIME, compresslevel=6) as zipped:
            with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
                for name, data in entries:
                    _add_bytes(archive, name, data)

    names = [name for name, _ in entries]
    if len(names) != len(set(names)):
        clashes = sorted({name for name in names if names.count(name) > 1})
        raise SourceDirError(f"{source_dir}: {', '.join(clashes[:3])} would be packed twice (a package beside it)")
    write_atomically(destination, write)
    digest = hashlib.sha256(destination.read_bytes()).hexdigest()
    label = _NAME.sub("-", source_dir.name.lower()).strip("-")[:24] or "source"
    return SourceArchive(path=destination, digest=digest, label=label)


def build_builtin_example_archive(destination: Path) -> SourceArchive:
    """The built-in example's archive: its entry point's directory and the model package it imports."""
    return build_source_archive(destination, BUILTIN_EXAMPLE_DIR, packages=BUILTIN_EXAMPLE_PACKAGES)
