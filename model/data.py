"""Data channels for the training job: a synthetic CIFAR-shaped data set and a CIFAR-10 converter.

A channel is a directory holding ``x.npy`` (uint8, shape (N, 32, 32, 3), HWC
images) and ``y.npy`` (int64, shape (N,), class indices), the layout the
training job reads from ``SM_CHANNEL_TRAIN`` / ``SM_CHANNEL_TEST``.

The synthetic set gives every class a smooth pattern (a few low-frequency
2-D waves per colour channel); a sample is its class pattern with a random
contrast, brightness and shift plus pixel noise. It is learnable in a couple
of epochs on a CPU, and it reproduces the reference dynamics: ResNet-20
without batch norm explodes at warmup learning rate 0.1, with batch norm it
trains to high held-out accuracy.

CLI::

    python -m model.data synthetic --out DIR [--train-samples N --test-samples M --seed S]
    python -m model.data cifar10 --archive cifar-10-python.tar.gz --out DIR
    python -m model.data check DIR [DIR ...]     # headers, sizes and labels, without loading the images

Nothing is downloaded: the CIFAR-10 converter reads the *python* archive
(``cifar-10-python.tar.gz`` from https://www.cs.toronto.edu/~kriz/cifar.html)
that the user provides.
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import sys
import tarfile
from pathlib import Path

import numpy as np

from contracts.atomic_files import write_atomically

IMAGE_SHAPE = (32, 32, 3)
IMAGES_FILE = "x.npy"
LABELS_FILE = "y.npy"
CHANNELS = ("train", "test")

#: The example builds a 10-class model (CIFAR-10's classes): every label is 0-9.
NUM_CLASSES = 10
DEFAULT_NUM_CLASSES = NUM_CLASSES
#: Labels are checked this many at a time (8 bytes each), so a channel of any size costs little memory.
LABEL_BLOCK = 1 << 20
DEFAULT_NOISE = 48.0  # standard deviation of the pixel noise, in 0-255 units
DEFAULT_PATTERN_AMPLITUDE = 96.0  # peak amplitude of a class pattern, in 0-255 units
MAX_SHIFT_PIXELS = 2

CIFAR10_TRAIN_BATCHES = tuple(f"data_batch_{index}" for index in range(1, 6))
CIFAR10_TEST_BATCH = "test_batch"


class DataChannelError(ValueError):
    """A channel directory or file is missing or malformed; the message names the file and the fix."""


# --------------------------------------------------------------------------- synthetic data


def class_patterns(num_classes: int, pattern_seed: int = 0, waves_per_channel: int = 3) -> np.ndarray:
    """(num_classes, 32, 32, 3) float patterns in [-1, 1], smooth (low spatial frequencies)."""
    rng = np.random.default_rng([pattern_seed, num_classes, 0x5EED])
    rows, cols = np.meshgrid(np.arange(32) / 32.0, np.arange(32) / 32.0, indexing="ij")
    patterns = np.zeros((num_classes, *IMAGE_SHAPE), dtype=np.float64)
    for class_index in range(num_classes):
        for channel in range(3):
            frequencies = rng.integers(0, 4, size=(waves_per_channel, 2))
            phases = rng.uniform(0, 2 * np.pi, size=waves_per_channel)
            amplitudes = rng.uniform(0.5, 1.0, size=waves_per_channel)
            field = sum(
                amplitude * np.cos(2 * np.pi * (fy * rows + fx * cols) + phase)
                for (fy, fx), phase, amplitude in zip(frequencies, phases, amplitudes, strict=True)
            )
            patterns[class_index, :, :, channel] = field
        patterns[class_index] /= np.abs(patterns[class_index]).max()
    return patterns


def generate_synthetic_dataset(
    num_samples: int,
    seed: int,
    num_classes: int = DEFAULT_NUM_CLASSES,
    noise: float = DEFAULT_NOISE,
    pattern_amplitude: float = DEFAULT_PATTERN_AMPLITUDE,
    pattern_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(x uint8 (N, 32, 32, 3), y int64 (N,)), the same for the same arguments.

    The class patterns depend only on ``pattern_seed`` and ``num_classes``, so a
    train and a test set drawn with different ``seed`` share their classes.
    Labels are balanced (each class appears N // num_classes or one more times)
    and shuffled.
    """
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1; got {num_samples}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2; got {num_classes}")
    if noise < 0 or pattern_amplitude <= 0:
        raise ValueError(f"noise must be >= 0 and pattern_amplitude > 0; got {noise}, {pattern_amplitude}")
    patterns = class_patterns(num_classes, pattern_seed)
    rng = np.random.default_rng([seed, 0xDA7A])
    labels = rng.permutation(np.arange(num_samples) % num_classes).astype(np.int64)
    contrast = rng.uniform(0.6, 1.4, size=(num_samples, 1, 1, 1))
    brightness = rng.uniform(-24.0, 24.0, size=(num_samples, 1, 1, 1))
    images = 127.5 + brightness + pattern_amplitude * contrast * patterns[labels]
    shifts = rng.integers(-MAX_SHIFT_PIXELS, MAX_SHIFT_PIXELS + 1, size=(num_samples, 2))
    for index, (shift_rows, shift_cols) in enumerate(shifts):
        images[index] = np.roll(images[index], (int(shift_rows), int(shift_cols)), axis=(0, 1))
    images += rng.normal(0.0, noise, size=images.shape)
    return np.clip(np.rint(images), 0, 255).astype(np.uint8), labels


# --------------------------------------------------------------------------- channels on disk


def _save_array_atomically(path: Path, array: np.ndarray) -> None:
    write_atomically(path, lambda handle: np.save(handle, array, allow_pickle=False))


def _check_images(shape: tuple[int, ...], dtype: np.dtype, where: str) -> None:
    if dtype != np.uint8 or len(shape) != 4 or shape[1:] != IMAGE_SHAPE:
        raise DataChannelError(
            f"{where}: images must be uint8 of shape (N, 32, 32, 3) (height, width, RGB); "
            f"got {dtype} of shape {shape}. Convert them with numpy, e.g. "
            "x.astype(np.uint8) and x.transpose(0, 2, 3, 1) for NCHW data."
        )


def _check_label_header(shape: tuple[int, ...], dtype: np.dtype, count: int, where: str) -> None:
    if dtype != np.int64 or len(shape) != 1:
        raise DataChannelError(
            f"{where}: labels must be int64 of shape (N,); got {dtype} of shape {shape}. "
            "Save them with y.astype(np.int64).reshape(-1)."
        )
    if shape[0] != count:
        raise DataChannelError(f"{where}: holds {shape[0]} labels for {count} images; they must match one to one.")


def _check_label_values(y: np.ndarray, where: str) -> None:
    """Every label a class of the model (0 .. NUM_CLASSES - 1), read in blocks so a memory-mapped file is never
    loaded whole."""
    for start in range(0, y.shape[0], LABEL_BLOCK):
        block = np.asarray(y[start : start + LABEL_BLOCK])
        bad = np.flatnonzero((block < 0) | (block >= NUM_CLASSES))
        if bad.size:
            index = start + int(bad[0])
            raise DataChannelError(
                f"{where}: labels must be class indices 0-{NUM_CLASSES - 1} (the example builds a {NUM_CLASSES}-class "
                f"model); found {int(y[index])} at index {index}."
            )


def _read_header(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from the .npy header alone; DataChannelError for a file that is not a whole .npy array."""
    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _fortran_order, dtype = read_header(handle)
            data_offset = handle.tell()
    except (ValueError, OSError, EOFError) as error:
        raise DataChannelError(f"{path} is not a readable .npy array ({error}); write it with numpy.save.") from None
    if dtype.hasobject:
        raise DataChannelError(f"{path} holds Python objects ({dtype}); save a numeric array with numpy.save.")
    expected = data_offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    actual = path.stat().st_size
    if actual < expected:
        raise DataChannelError(
            f"{path} is truncated: its header announces {dtype} {shape} ({expected} bytes) but the file has {actual}; "
            "write it again with numpy.save."
        )
    return tuple(int(size) for size in shape), dtype


def _channel_files(directory: Path) -> tuple[Path, Path]:
    if not directory.exists():
        raise DataChannelError(
            f"channel directory {directory} does not exist; create it with "
            "`python -m model.data synthetic --out DIR` (or `cifar10 --archive FILE --out DIR`) "
            "and point the channel at DIR/train or DIR/test."
        )
    if not directory.is_dir():
        raise DataChannelError(f"channel {directory} is a file; a channel is a directory holding {IMAGES_FILE} and {LABELS_FILE}.")
    paths = (directory / IMAGES_FILE, directory / LABELS_FILE)
    for path in paths:
        if not path.is_file():
            raise DataChannelError(
                f"{path} is {'a directory' if path.is_dir() else 'missing'}; a channel holds {IMAGES_FILE} (uint8 images, "
                f"shape (N, 32, 32, 3)) and {LABELS_FILE} (int64 labels, shape (N,)); write them with "
                "model.data.write_channel."
            )
    return paths


def check_channel(directory: str | os.PathLike) -> int:
    """Check a channel without loading its images: the .npy headers, the file sizes, then the labels in blocks
    of a memory map. Returns the sample count; DataChannelError names the file, what was found and the fix."""
    directory = Path(directory)
    images_path, labels_path = _channel_files(directory)
    image_shape, image_dtype = _read_header(images_path)
    _check_images(image_shape, image_dtype, str(images_path))
    count = image_shape[0]
    if count == 0:
        raise DataChannelError(f"{images_path} holds no images; a channel needs at least one sample.")
    label_shape, label_dtype = _read_header(labels_path)
    _check_label_header(label_shape, label_dtype, count, str(labels_path))
    _check_label_values(np.load(labels_path, mmap_mode="r", allow_pickle=False), str(labels_path))
    return count


def write_channel(directory: str | os.PathLike, x: np.ndarray, y: np.ndarray) -> Path:
    """Write x.npy and y.npy into ``directory`` (created if needed), each atomically."""
    directory = Path(directory)
    _check_images(x.shape, x.dtype, "images to write")
    _check_label_header(y.shape, y.dtype, x.shape[0], "labels to write")
    _check_label_values(y, "labels to write")
    directory.mkdir(parents=True, exist_ok=True)
    _save_array_atomically(directory / IMAGES_FILE, x)
    _save_array_atomically(directory / LABELS_FILE, y)
    return directory


def load_channel(directory: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a channel written by :func:`write_channel` (checked first, see :func:`check_channel`)."""
    directory = Path(directory)
    check_channel(directory)
    return (
        np.load(directory / IMAGES_FILE, allow_pickle=False),
        np.load(directory / LABELS_FILE, allow_pickle=False),
    )


def write_synthetic_channels(
    out_dir: str | os.PathLike,
    train_samples: int = 2560,
    test_samples: int = 512,
    seed: int = 0,
    noise: float = DEFAULT_NOISE,
) -> dict[str, Path]:
    """Write out_dir/train and out_dir/test from the synthetic generator (disjoint sample seeds, shared classes)."""
    out_dir = Path(out_dir)
    x_train, y_train = generate_synthetic_dataset(train_samples, seed=2 * seed, noise=noise)
    x_test, y_test = generate_synthetic_dataset(test_samples, seed=2 * seed + 1, noise=noise)
    return {
        "train": write_channel(out_dir / "train", x_train, y_train),
        "test": write_channel(out_dir / "test", x_test, y_test),
    }


# --------------------------------------------------------------------------- CIFAR-10 converter


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """Unpickles CIFAR batches (dicts of numpy arrays, lists, bytes) and refuses any other class."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # how Python 3 writes bytes into a protocol-2 pickle
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: a CIFAR-10 batch holds only arrays")
        return super().find_class(module, name)


def _read_cifar_batch(archive: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str, archive_path: Path):
    member = members.get(name)
    if member is None:
        raise DataChannelError(
            f"{archive_path} has no {name}; expected the CIFAR-10 *python* archive (cifar-10-python.tar.gz "
            f"with cifar-10-batches-py/{', '.join(CIFAR10_TRAIN_BATCHES)}, {CIFAR10_TEST_BATCH})."
        )
    handle = archive.extractfile(member)
    if handle is None:
        raise DataChannelError(f"{archive_path}: {member.name} is not a regular file.")
    try:
        batch = _ArrayOnlyUnpickler(io.BytesIO(handle.read()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as error:
        raise DataChannelError(f"{archive_path}: {member.name} is not a CIFAR-10 python batch ({error}).") from None
    if not isinstance(batch, dict):
        raise DataChannelError(f"{archive_path}: {member.name} does not hold a dict with data and labels.")
    batch = {key.decode() if isinstance(key, bytes) else key: value for key, value in batch.items()}
    if "data" not in batch or "labels" not in batch:
        raise DataChannelError(f"{archive_path}: {member.name} lacks the 'data' or 'labels' entry.")
    data = np.asarray(batch["data"])
    labels = np.asarray(batch["labels"], dtype=np.int64).reshape(-1)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or data.shape[0] != labels.shape[0]:
        raise DataChannelError(
            f"{archive_path}: {member.name} data must be uint8 of shape (N, 3072) with N labels; "
            f"got {data.dtype} {data.shape} and {labels.shape[0]} labels."
        )
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # rows are R, G, B planes of 32x32
    return np.ascontiguousarray(images), labels


def convert_cifar10_archive(archive_path: str | os.PathLike, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Convert cifar-10-python.tar.gz into out_dir/train (50,000 samples) and out_dir/test (10,000)."""
    archive_path = Path(archive_path)
    if not archive_path.is_file():
        raise DataChannelError(
            f"{archive_path} does not exist; download cifar-10-python.tar.gz from "
            "https://www.cs.toronto.edu/~kriz/cifar.html and pass its path."
        )
    try:
        archive = tarfile.open(archive_path, mode="r:*")
    except tarfile.TarError as error:
        raise DataChannelError(f"{archive_path} is not a tar archive ({error}); pass cifar-10-python.tar.gz.") from None
    with archive:
        members = {Path(member.name).name: member for member in archive.getmembers() if member.isfile()}
        train_parts = [_read_cifar_batch(archive, members, name, archive_path) for name in CIFAR10_TRAIN_BATCHES]
        x_test, y_test = _read_cifar_batch(archive, members, CIFAR10_TEST_BATCH, archive_path)
    x_train = np.concatenate([images for images, _ in train_parts])
    y_train = np.concatenate([labels for _, labels in train_parts])
    out_dir = Path(out_dir)
    return {
        "train": write_channel(out_dir / "train", x_train, y_train),
        "test": write_channel(out_dir / "test", x_test, y_test),
    }


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.data", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    synthetic = commands.add_parser("synthetic", help="write synthetic train/test channels")
    synthetic.add_argument("--out", required=True, type=Path, help="directory that receives train/ and test/")
    synthetic.add_argument("--train-samples", type=int, default=2560)
    synthetic.add_argument("--test-samples", type=int, default=512)
    synthetic.add_argument("--seed", type=int, default=0)
    synthetic.add_argument("--noise", type=float, default=DEFAULT_NOISE, help="pixel noise standard deviation (0-255)")
    cifar = commands.add_parser("cifar10", help="convert the CIFAR-10 python archive into train/test channels")
    cifar.add_argument("--archive", required=True, type=Path, help="cifar-10-python.tar.gz")
    cifar.add_argument("--out", required=True, type=Path, help="directory that receives train/ and test/")
    check = commands.add_parser("check", help="check channel directories without loading them (exit 2 naming the problem)")
    check.add_argument("channels", nargs="+", type=Path, metavar="DIR")
    arguments = parser.parse_args(argv)
    try:
        if arguments.command == "check":
            for directory in arguments.channels:
                print(f"{directory}: {check_channel(directory)} samples")
            return 0
        if arguments.command == "synthetic":
            for label, count in (
                ("--train-samples", arguments.train_samples),
                ("--test-samples", arguments.test_samples),
            ):
                if count < 1:
                    parser.error(f"{label} must be at least 1; got {count}")
            if arguments.seed < 0:
                parser.error(f"--seed must be >= 0; got {arguments.seed}")
            if arguments.noise < 0:
                parser.error(f"--noise must be >= 0; got {arguments.noise}")
            channels = write_synthetic_channels(
                arguments.out, arguments.train_samples, arguments.test_samples, arguments.seed, arguments.noise
            )
        else:
            channels = convert_cifar10_archive(arguments.archive, arguments.out)
    except DataChannelError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, path in channels.items():
        count = np.load(path / LABELS_FILE, mmap_mode="r").shape[0]
        print(f"{name}: {path} ({count} samples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
