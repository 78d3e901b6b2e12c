"""Every bad input to `remediate local run` is one clear line naming the option or field, what was found and
what is allowed; exit code 2; no traceback; nothing started (no local account, no training process) and
nothing written (no run directory). Run in-process through remediate.main, as the console script runs it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from local_runtime import runtime as local_runtime_module
from remediate.main import main

Setup = Callable[[Path], list[str]]


def run_spec(content: object | bytes) -> Setup:
    def setup(tmp: Path) -> list[str]:
        path = tmp / "spec.json"
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        return ["--run-spec", str(path)]

    return setup


def channel(tmp: Path, name: str, x: np.ndarray | None = None, y: np.ndarray | None = None, count: int = 6) -> Path:
    directory = tmp / "data" / name
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "x.npy", np.zeros((count, 32, 32, 3), np.uint8) if x is None else x)
    np.save(directory / "y.npy", (np.arange(count) % 10).astype(np.int64) if y is None else y)
    return directory


def data(train_x=None, train_y=None) -> Setup:
    def setup(tmp: Path) -> list[str]:
        channel(tmp, "train", train_x, train_y)
        channel(tmp, "test")
        return ["--data", str(tmp / "data")]

    return setup


def labels_with(value: int) -> np.ndarray:
    labels = (np.arange(6) % 10).astype(np.int64)
    labels[3] = value
    return labels


def args(*values: str) -> Setup:
    return lambda tmp: [value.replace("{tmp}", str(tmp)) for value in values]


def with_files(make: Callable[[Path], None], *values: str) -> Setup:
    def setup(tmp: Path) -> list[str]:
        make(tmp)
        return [value.replace("{tmp}", str(tmp)) for value in values]

    return setup


def truncated_images(tmp: Path) -> list[str]:
    directory = channel(tmp, "train")
    channel(tmp, "test")
    data_bytes = (directory / "x.npy").read_bytes()
    (directory / "x.npy").write_bytes(data_bytes[: len(data_bytes) // 2])
    return ["--data", str(tmp / "data")]


def not_npy_labels(tmp: Path) -> list[str]:
    directory = channel(tmp, "train")
    channel(tmp, "test")
    (directory / "y.npy").write_text("0,1,2,3,4,5")
    return ["--data", str(tmp / "data")]


def a_fifo(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "spec.json")
    return ["--run-spec", str(tmp / "spec.json")]


def user_script(tmp: Path) -> Path:
    (tmp / "src").mkdir(exist_ok=True)
    (tmp / "src" / "train.py").write_text("print('hello')\n")
    return tmp / "src"


def user_run_spec(content: dict) -> Setup:
    """A run_spec for a script of the user's (src/train.py next to the file), with ``content`` on top."""

    def setup(tmp: Path) -> list[str]:
        user_script(tmp)
        base = {"source_dir": "src", "entry_point": "train.py", "hyperparameters": {"lr": 0.1, "epochs": 2}}
        return run_spec({**base, **content})(tmp)

    return setup


CASES: dict[str, tuple[Setup, str]] = {
    # ---------------------------------------------------------------- files and directories
    "run-spec is a directory": (lambda tmp: ["--run-spec", str(tmp)], "--run-spec {tmp}: is a directory; pass the path"),
    "run-spec missing": (args("--run-spec", "{tmp}/nope.json"), "nope.json: no such file"),
    "run-spec is a fifo": (a_fifo, "spec.json: is not a regular file"),
    "run-spec not UTF-8": (run_spec(b'\xff\xfe{"policy": "anchor"}'), "is not UTF-8 text (byte 0xff at offset 0)"),
    "run-spec empty": (run_spec(b"  \n"), "spec.json: is empty"),
    "run-spec bad JSON": (run_spec(b'{"policy": "anchor",}'), "not valid JSON at line 1 column 21"),
    "run-spec a list": (run_spec([1, 2]), "must hold a JSON object of execution-input keys (got a JSON list)"),
    "run-spec NaN literal": (run_spec(b'{"learning_rate": NaN}'), "NaN is not JSON"),
    "run-spec huge": (run_spec(b'{"x": "' + b"a" * (1 << 20) + b'"}'), "a run_spec is a JSON object of at most"),
    "run-dir is a file": (with_files(lambda t: (t / "f").write_text("x"), "--run-dir", "{tmp}/f"), "--run-dir {tmp}/f: is a file"),
    "run-dir under a file": (
        with_files(lambda t: (t / "f").write_text("x"), "--run-dir", "{tmp}/f/run"),
        "{tmp}/f is a file, so the directory cannot be made there",
    ),
    "run-dir holds a run": (
        with_files(lambda t: (t / "old").mkdir() or (t / "old" / "summary.json").write_text("{}"), "--run-dir", "{tmp}/old"),
        "already holds files (summary.json); a run never writes over another",
    ),
    "data is a file": (with_files(lambda t: (t / "d").write_text("x"), "--data", "{tmp}/d"), "--data {tmp}/d: is a file"),
    "data missing": (args("--data", "{tmp}/nodata"), "--data {tmp}/nodata: no such directory"),
    "data without test": (
        with_files(lambda t: channel(t, "train"), "--data", "{tmp}/data"),
        "test/ is missing; the built-in example reads train/ and test/",
    ),
    "source-dir is a file": (
        with_files(lambda t: (t / "s.py").write_text(""), "--source-dir", "{tmp}/s.py", "--entry-point", "s.py"),
        "source_dir {tmp}/s.py: is a file",
    ),
    "source-dir missing": (args("--source-dir", "{tmp}/nosrc", "--entry-point", "train.py"), "{tmp}/nosrc: no such directory"),
    "entry-point not there": (
        with_files(user_script, "--source-dir", "{tmp}/src", "--entry-point", "main.py"),
        "entry_point main.py: not found in source_dir",
    ),
    "entry-point outside": (
        with_files(user_script, "--source-dir", "{tmp}/src", "--entry-point", "../train.py"),
        "entry_point: must be the path of a Python file inside the source directory",
    ),
    "channel is a file": (
        with_files(lambda t: user_script(t) and (t / "c").write_text("x"), "--source-dir", "{tmp}/src", "--entry-point",
                   "train.py", "--channel", "train={tmp}/c"),
        "--channel train={tmp}/c: {tmp}/c: is a file",
    ),
    "channel without =": (args("--channel", "train"), "--channel 'train': write NAME=DIR"),
    "channel empty dir": (
        with_files(lambda t: user_script(t) and (t / "empty").mkdir(), "--source-dir", "{tmp}/src", "--entry-point",
                   "train.py", "--channel", "train={tmp}/empty"),
        "--channel train={tmp}/empty: {tmp}/empty: holds no files",
    ),
    "channels: test missing": (
        with_files(lambda t: channel(t, "train"), "--channel", "train={tmp}/data/train"),
        "channels: the built-in example reads train and test; test is missing",
    ),
    # ---------------------------------------------------------------- strict types
    "learning_rate a string": (run_spec({"learning_rate": "0.1"}), "learning_rate: must be a number, not a string (got '0.1')"),
    "num_epochs a string": (run_spec({"num_epochs": "2"}), "num_epochs: must be a number, not a string"),
    "add_batch_norm yes": (run_spec({"add_batch_norm": "yes"}), "add_batch_norm: must be true/false or 1/0 (got 'yes')"),
    "max_num_retraining true": (run_spec({"max_num_retraining": True}), "max_num_retraining: must be a number, not a boolean"),
    "example batch_size a string": (
        run_spec({"hyperparameters": {"batch_size": "64"}}),
        "hyperparameters.batch_size: must be a number like the example's default 128 (got \"64\")",
    ),
    "example unknown hyperparameter": (run_spec({"hyperparameters": {"dept": 3}}), "'dept': is not a known hyperparameter"),
    "example depth a string": (
        run_spec({"hyperparameters": {"depth": "20"}}),
        "hyperparameter 'depth': must be a whole number; got \"20\" (write it without quotes)",
    ),
    "unknown key": (run_spec({"warmup_learnin_rate": 0.1}), "warmup_learnin_rate: is not a known key"),
    # ---------------------------------------------------------------- a misspelt name: the near one is suggested
    "key misspelt": (
        run_spec({"hyperparamters": {"depth": 20}}),
        "hyperparamters: is not a known key (did you mean 'hyperparameters'?); allowed keys: add_batch_norm, allow_loss_changes, base_job_name",
    ),
    "policy misspelt": (run_spec({"policy": "evidnce"}), "(got 'evidnce') (did you mean 'evidence'?)"),
    "framework misspelt": (run_spec({"framework": "pytorh"}), "(got 'pytorh') (did you mean 'pytorch'?)"),
    "rule misspelt": (
        run_spec({"rules": ["ExplodingTensr"]}),
        "rules[0]: 'ExplodingTensr' is not a built-in rule of the debugger (did you mean 'ExplodingTensor'?)",
    ),
    "rule parameter misspelt": (
        run_spec({"rules": [{"name": "DeadRelu", "parameters": {"threshold_layr": "0.5"}}]}),
        "threshold_layr: is not a parameter of DeadRelu (did you mean 'threshold_layer'?)",
    ),
    "objective key misspelt": (
        user_run_spec({"objective": {"metric_nme": "val:acc", "type": "Maximize", "target_value": 0.9}}),
        "objective.metric_nme: is not a key of an objective (did you mean 'metric_name'?)",
    ),
    "remedy rule misspelt": (
        user_run_spec({"remedies": {"ExplodingTensr": [{"hyperparameter": "lr", "multiply_by": 0.5}]}}),
        "remedies.ExplodingTensr: is not a built-in rule or failure kind (did you mean 'ExplodingTensor'?)",
    ),
    "remedy operation misspelt": (
        user_run_spec({"remedies": {"*": [{"hyperparameter": "lr", "multiply": 0.5}]}}),
        "multiply: is not a remedy key (did you mean 'multiply_by'?)",
    ),
    "remedy hyperparameter misspelt": (
        user_run_spec({"remedies": {"*": [{"hyperparameter": "epoch", "multiply_by": 2}]}}),
        "'epoch' is not in run_spec.hyperparameters (did you mean 'epochs'?)",
    ),
    "hyperparameters a list": (run_spec({"hyperparameters": [1]}), "hyperparameters: must be a JSON object"),
    # ---------------------------------------------------------------- negative, zero, NaN, infinite, absurd
    "learning_rate negative": (run_spec({"learning_rate": -1}), "learning_rate: must be > 0 (got -1)"),
    "learning_rate zero": (run_spec({"init_warmup_learning_rate": 0}), "init_warmup_learning_rate: must be > 0 (got 0)"),
    "learning_rate infinite": (run_spec(b'{"learning_rate": 1e400}'), "learning_rate: must be a finite number (got inf)"),
    "num_epochs zero": (run_spec({"num_epochs": 0}), "num_epochs: must be >= 1 (got 0)"),
    "num_epochs absurd": (run_spec({"num_epochs": 10_000_000}), "num_epochs: must be <= 10000"),
    "max_num_retraining absurd": (run_spec({"max_num_retraining": 51}), "max_num_retraining: must be <= 50 (got 51)"),
    "monitor interval negative": (run_spec({"monitor_interval_seconds": -1}), "monitor_interval_seconds: must be >= 1"),
    "example batch_size zero": (run_spec({"hyperparameters": {"batch_size": 0}}), "'batch_size': must be >= 1"),
    "grace negative": (args("--stop-grace-seconds", "-1"), "argument --stop-grace-seconds: must be more than 0 and at most 600 seconds (got -1)"),
    "grace NaN": (args("--stop-grace-seconds", "nan"), "argument --stop-grace-seconds: must be a finite number of seconds (got nan)"),
    "grace infinite": (args("--stop-grace-seconds", "inf"), "--stop-grace-seconds: must be a finite number of seconds (got inf)"),
    "grace zero": (args("--stop-grace-seconds", "0"), "--stop-grace-seconds: must be more than 0"),
    "grace a word": (args("--stop-grace-seconds", "ten"), "--stop-grace-seconds: must be a number of seconds"),
    "threads zero": (args("--num-threads", "0"), f"argument --num-threads: must be from 1 to {os.cpu_count()} (got 0)"),
    "threads above the cores": (
        args("--num-threads", str((os.cpu_count() or 1) + 1)),
        f"--num-threads: must be from 1 to {os.cpu_count()} (this machine has {os.cpu_count()} cores; more threads "
        "than cores slow training down)",
    ),
    "train-samples zero": (args("--train-samples", "0"), "argument --train-samples: must be from 1 to 50000"),
    "train-samples absurd": (args("--train-samples", "10000000"), "must be from 1 to 50000 (CIFAR-10's size"),
    "train-samples a word": (args("--train-samples", "many"), "must be a whole number from 1 to 50000 (got 'many')"),
    "test-samples negative": (args("--test-samples", "-5"), "argument --test-samples: must be from 1 to 10000 (got -5)"),
    "objective NaN": (args("--objective", "test:accuracy>=nan"), "the target must be a finite number (got nan)"),
    "hyperparameter NaN": (args("--hyperparameters", "learning_rate=NaN"), "a value is a finite number, true/false or text"),
    "samples for a user script": (
        with_files(user_script, "--source-dir", "{tmp}/src", "--entry-point", "train.py", "--train-samples", "10"),
        "--train-samples: generates data for the built-in example only",
    ),
    "test-samples with data": (
        lambda tmp: [*data()(tmp), "--test-samples", "10"],
        "--test-samples: sizes the generated data; it has no meaning with --data or --channel",
    ),
    # ---------------------------------------------------------------- the example's channels, read without loading them
    "label 20": (data(train_y=labels_with(20)), "labels must be class indices 0-9 (the example builds a 10-class model); found 20 at index 3"),
    "label a million": (data(train_y=labels_with(1_000_000)), "found 1000000 at index 3"),
    "label negative": (data(train_y=labels_with(-1)), "found -1 at index 3"),
    "float images": (data(train_x=np.zeros((6, 32, 32, 3), np.float32)), "images must be uint8 of shape (N, 32, 32, 3)"),
    "NCHW images": (data(train_x=np.zeros((6, 3, 32, 32), np.uint8)), "got uint8 of shape (6, 3, 32, 32)"),
    "int32 labels": (data(train_y=np.zeros(6, np.int32)), "labels must be int64 of shape (N,); got int32"),
    "float labels with NaN": (data(train_y=np.array([0, 1, np.nan, 3, 4, 5])), "labels must be int64 of shape (N,); got float64"),
    "length mismatch": (data(train_y=np.zeros(5, np.int64)), "holds 5 labels for 6 images"),
    "no samples": (data(train_x=np.zeros((0, 32, 32, 3), np.uint8), train_y=np.zeros(0, np.int64)), "holds no images"),
    "truncated images": (truncated_images, "is truncated: its header announces uint8 (6, 32, 32, 3)"),
    "labels not npy": (not_npy_labels, "y.npy is not a readable .npy array"),
}


@pytest.fixture
def launches(monkeypatch):
    """Every LocalRuntime made (there must be none): the real class, watched."""
    made = []
    original = local_runtime_module.LocalRuntime.__init__

    def watched(self, *arguments, **keywords):
        made.append(self)
        original(self, *arguments, **keywords)

    monkeypatch.setattr(local_runtime_module.LocalRuntime, "__init__", watched)
    return made


def test_there_are_enough_cases_for_every_class_of_bad_input():
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_one_clear_line_exit_2_and_nothing_started(case, tmp_path, monkeypatch, capsys, launches):
    setup, expected = CASES[case]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the default run directory would be work/runs
    argv = ["local", "run", *setup(tmp_path)]
    before = sorted(path.name for path in tmp_path.iterdir())
    try:
        code = main(argv)
    except SystemExit as exit_request:  # argparse's own refusals
        code = exit_request.code
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert expected.replace("{tmp}", str(tmp_path)) in lines[0], lines[0]
    assert captured.out == ""
    assert launches == [], "no local account may be set up for bad input"
    assert not (work / "runs").exists(), "no run directory may be written for bad input"
    assert sorted(path.name for path in tmp_path.iterdir()) == before, "nothing may be written next to the inputs"
