import io
import pickle
import tarfile
from collections import OrderedDict

import numpy as np
import pytest

from model.data import (
    DataChannelError,
    check_channel,
    convert_cifar10_archive,
    generate_synthetic_dataset,
    load_channel,
    main,
    write_channel,
    write_synthetic_channels,
)


def test_generator_is_deterministic_per_seed_and_differs_across_seeds():
    first_x, first_y = generate_synthetic_dataset(64, seed=3)
    again_x, again_y = generate_synthetic_dataset(64, seed=3)
    other_x, _ = generate_synthetic_dataset(64, seed=4)
    np.testing.assert_array_equal(first_x, again_x)
    np.testing.assert_array_equal(first_y, again_y)
    assert not np.array_equal(first_x, other_x)
    assert first_x.dtype == np.uint8 and first_x.shape == (64, 32, 32, 3)
    assert first_y.dtype == np.int64 and first_y.shape == (64,)


def test_labels_are_balanced_and_images_use_the_pixel_range():
    x, y = generate_synthetic_dataset(1000, seed=0)
    assert np.bincount(y, minlength=10).tolist() == [100] * 10
    assert x.min() < 20 and x.max() > 235  # noise and contrast spread the pixels, not a flat image


def test_classes_share_patterns_across_seeds_and_are_separable():
    """Train and test sets drawn with different seeds hold the same classes: a nearest-class-mean
    classifier fitted on one set labels the other far above chance (10%)."""
    x_train, y_train = generate_synthetic_dataset(1000, seed=0)
    x_test, y_test = generate_synthetic_dataset(300, seed=1)
    train = x_train.reshape(len(x_train), -1).astype(np.float64)
    test = x_test.reshape(len(x_test), -1).astype(np.float64)
    train -= train.mean(axis=1, keepdims=True)  # the random brightness is not a class feature
    test -= test.mean(axis=1, keepdims=True)
    centroids = np.stack([train[y_train == label].mean(axis=0) for label in range(10)])
    distances = ((test[:, None, :] - centroids[None]) ** 2).sum(axis=2)
    accuracy = (distances.argmin(axis=1) == y_test).mean()
    assert accuracy > 0.6


def test_noise_argument_controls_the_noise():
    quiet, labels = generate_synthetic_dataset(200, seed=0, noise=0.0)
    noisy, _ = generate_synthetic_dataset(200, seed=0, noise=80.0)
    first_class = labels == labels[0]
    assert noisy[first_class].astype(float).std(axis=0).mean() > quiet[first_class].astype(float).std(axis=0).mean()


def test_write_and_load_channel_round_trip_without_leftovers(tmp_path):
    x, y = generate_synthetic_dataset(20, seed=0)
    directory = write_channel(tmp_path / "train", x, y)
    assert sorted(path.name for path in directory.iterdir()) == ["x.npy", "y.npy"]
    loaded_x, loaded_y = load_channel(directory)
    np.testing.assert_array_equal(loaded_x, x)
    np.testing.assert_array_equal(loaded_y, y)


def test_write_synthetic_channels_defaults(tmp_path):
    channels = write_synthetic_channels(tmp_path)
    assert set(channels) == {"train", "test"}
    assert load_channel(channels["train"])[0].shape == (2560, 32, 32, 3)
    assert load_channel(channels["test"])[1].shape == (512,)


@pytest.mark.parametrize(
    ("breakage", "fragment"),
    [
        ("no_directory", "does not exist"),
        ("no_labels", "y.npy is missing"),
        ("float_images", "images must be uint8 of shape (N, 32, 32, 3)"),
        ("nchw_images", "x.transpose(0, 2, 3, 1)"),
        ("int32_labels", "labels must be int64"),
        ("count_mismatch", "3 labels for 4 images"),
        ("not_npy", "is not a readable .npy array"),
    ],
)
def test_load_channel_names_the_file_and_the_fix(tmp_path, breakage, fragment):
    directory = tmp_path / "channel"
    x, y = generate_synthetic_dataset(4, seed=0)
    if breakage != "no_directory":
        directory.mkdir()
        images, labels = x, y
        if breakage == "float_images":
            images = x.astype(np.float32)
        elif breakage == "nchw_images":
            images = x.transpose(0, 3, 1, 2).copy()
        elif breakage == "int32_labels":
            labels = y.astype(np.int32)
        elif breakage == "count_mismatch":
            labels = y[:3]
        np.save(directory / "x.npy", images)
        if breakage == "not_npy":
            (directory / "y.npy").write_text("0,1,2,3")
        elif breakage != "no_labels":
            np.save(directory / "y.npy", labels)
    with pytest.raises(DataChannelError) as caught:
        load_channel(directory)
    assert fragment in str(caught.value)
    assert str(directory) in str(caught.value)


def test_synthetic_cli(tmp_path, capsys):
    assert (
        main(["synthetic", "--out", str(tmp_path), "--train-samples", "30", "--test-samples", "10", "--seed", "2"]) == 0
    )
    assert "train:" in capsys.readouterr().out
    x, y = load_channel(tmp_path / "train")
    np.testing.assert_array_equal(x, generate_synthetic_dataset(30, seed=4)[0])
    assert load_channel(tmp_path / "test")[1].shape == (10,)


# --------------------------------------------------------------------------- CIFAR-10 converter


def _cifar_batch(count: int, first_label: int, rng: np.random.Generator) -> tuple[bytes, np.ndarray, list[int]]:
    """A batch pickled like the real cifar-10-batches-py files (protocol 2, bytes keys, NCHW rows)."""
    data = rng.integers(0, 256, size=(count, 3072), dtype=np.uint8)
    labels = [(first_label + index) % 10 for index in range(count)]
    batch = {
        b"batch_label": b"training batch",
        b"labels": labels,
        b"data": data,
        b"filenames": [f"image_{index}.png".encode() for index in range(count)],
    }
    return pickle.dumps(batch, protocol=2), data, labels


def _write_archive(path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, payload in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))


def test_cifar10_converter_reads_the_python_archive_format(tmp_path):
    rng = np.random.default_rng(0)
    members, expected_data, expected_labels = {}, [], []
    for index in range(1, 6):
        payload, data, labels = _cifar_batch(3, index, rng)
        members[f"data_batch_{index}"] = payload
        expected_data.append(data)
        expected_labels += labels
    test_payload, test_data, test_labels = _cifar_batch(2, 7, rng)
    members["test_batch"] = test_payload
    members["batches.meta"] = pickle.dumps({b"label_names": [b"airplane"] * 10}, protocol=2)
    archive = tmp_path / "cifar-10-python.tar.gz"
    _write_archive(archive, members)

    channels = convert_cifar10_archive(archive, tmp_path / "channels")
    x_train, y_train = load_channel(channels["train"])
    x_test, y_test = load_channel(channels["test"])
    assert x_train.shape == (15, 32, 32, 3) and x_test.shape == (2, 32, 32, 3)
    assert y_train.tolist() == expected_labels and y_test.tolist() == test_labels
    # A row holds the 1024 red values, then green, then blue, each row-major over 32x32.
    first = expected_data[0][0]
    assert x_train[0, 0, 0].tolist() == [first[0], first[1024], first[2048]]
    assert x_train[0, 1, 2, 1] == first[1024 + 32 + 2]
    assert x_test[1, 31, 31, 2] == test_data[1][3071]


def test_cifar10_cli(tmp_path, capsys):
    rng = np.random.default_rng(1)
    members = {f"data_batch_{index}": _cifar_batch(1, index, rng)[0] for index in range(1, 6)}
    members["test_batch"] = _cifar_batch(1, 0, rng)[0]
    _write_archive(tmp_path / "archive.tar.gz", members)
    assert main(["cifar10", "--archive", str(tmp_path / "archive.tar.gz"), "--out", str(tmp_path / "out")]) == 0
    assert "train: " in capsys.readouterr().out
    assert load_channel(tmp_path / "out" / "train")[0].shape == (5, 32, 32, 3)


def test_cifar10_converter_errors_name_the_problem(tmp_path):
    with pytest.raises(DataChannelError, match="does not exist; download cifar-10-python.tar.gz"):
        convert_cifar10_archive(tmp_path / "absent.tar.gz", tmp_path / "out")
    rng = np.random.default_rng(2)
    incomplete = tmp_path / "incomplete.tar.gz"
    _write_archive(incomplete, {"data_batch_1": _cifar_batch(1, 0, rng)[0]})
    with pytest.raises(DataChannelError, match="has no data_batch_2"):
        convert_cifar10_archive(incomplete, tmp_path / "out")
    not_tar = tmp_path / "not.tar.gz"
    not_tar.write_bytes(b"plain bytes")
    with pytest.raises(DataChannelError, match="is not a tar archive"):
        convert_cifar10_archive(not_tar, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cifar10_converter_refuses_pickles_that_are_not_plain_batches(tmp_path):
    rng = np.random.default_rng(3)
    members = {f"data_batch_{index}": _cifar_batch(1, index, rng)[0] for index in range(1, 6)}
    members["data_batch_3"] = pickle.dumps(OrderedDict(data=1), protocol=2)  # any class other than arrays
    members["test_batch"] = _cifar_batch(1, 0, rng)[0]
    archive = tmp_path / "odd.tar.gz"
    _write_archive(archive, members)
    with pytest.raises(
        DataChannelError, match="data_batch_3 is not a CIFAR-10 python batch.*refusing to load collections.OrderedDict"
    ):
        convert_cifar10_archive(archive, tmp_path / "out")


# --------------------------------------------------------------------------- checking a channel without loading it


@pytest.mark.parametrize(
    ("breakage", "fragment"),
    [
        ("label_20", "labels must be class indices 0-9 (the example builds a 10-class model); found 20 at index 1"),
        ("label_million", "found 1000000 at index 1"),
        ("negative_label", "found -1 at index 1"),
        ("truncated_images", "is truncated: its header announces uint8 (4, 32, 32, 3)"),
        ("object_labels", "holds Python objects"),
        ("no_samples", "holds no images"),
        ("labels_is_a_directory", "y.npy is a directory"),
    ],
)
def test_check_channel_reads_headers_and_labels_only(tmp_path, breakage, fragment):
    directory = tmp_path / "channel"
    directory.mkdir()
    x, y = generate_synthetic_dataset(4, seed=0)
    if breakage in ("label_20", "label_million", "negative_label"):
        y[1] = {"label_20": 20, "label_million": 1_000_000, "negative_label": -1}[breakage]
    if breakage == "no_samples":
        x, y = x[:0], y[:0]
    np.save(directory / "x.npy", x)
    if breakage == "object_labels":
        np.save(directory / "y.npy", np.array([1, "a", None, 2], dtype=object), allow_pickle=True)
    elif breakage == "labels_is_a_directory":
        (directory / "y.npy").mkdir()
    else:
        np.save(directory / "y.npy", y)
    if breakage == "truncated_images":
        data = (directory / "x.npy").read_bytes()
        (directory / "x.npy").write_bytes(data[:-100])
    with pytest.raises(DataChannelError) as caught:
        check_channel(directory)
    assert fragment in str(caught.value)


def test_check_cli_exits_2_with_the_problem(tmp_path, capsys):
    x, y = generate_synthetic_dataset(4, seed=0)
    y[0] = 10
    (tmp_path / "bad").mkdir()
    np.save(tmp_path / "bad" / "x.npy", x)
    np.save(tmp_path / "bad" / "y.npy", y)
    write_channel(tmp_path / "good", *generate_synthetic_dataset(4, seed=1))
    assert main(["check", str(tmp_path / "good")]) == 0
    assert "4 samples" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "good"), str(tmp_path / "bad")]) == 2
    assert "found 10 at index 0" in capsys.readouterr().err
