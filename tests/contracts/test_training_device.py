"""Which device a training job uses: the GPU when the container has one (SageMaker's SM_NUM_GPUS and what torch
sees), else the CPU, and the reason the job's log gives. Pure: tested here on a CPU-only machine."""

from __future__ import annotations

import pytest

from contracts.job import training_device


@pytest.mark.parametrize(
    ("cuda_devices", "environ", "device", "reason"),
    [
        (1, {"SM_NUM_GPUS": "1"}, "cuda", "SM_NUM_GPUS=1, torch sees 1 CUDA device"),
        (8, {"SM_NUM_GPUS": "8"}, "cuda", "uses 1 of the 8"),
        (0, {"SM_NUM_GPUS": "0"}, "cpu", "SM_NUM_GPUS=0"),
        (2, {"SM_NUM_GPUS": "0"}, "cpu", "SM_NUM_GPUS=0"),  # the platform gave the job no GPU
        (0, {"SM_NUM_GPUS": "4"}, "cpu", "torch sees no CUDA device"),  # a CPU image on a GPU instance
        (1, {}, "cuda", "torch sees 1 CUDA device"),  # outside SageMaker: what torch sees
        (0, {}, "cpu", "no CUDA device"),
        (1, {"SM_NUM_GPUS": "many"}, "cuda", "SM_NUM_GPUS='many' is not a number"),
    ],
)
def test_the_device_follows_the_containers_gpus(cuda_devices, environ, device, reason):
    chosen, why = training_device(cuda_devices, environ)
    assert chosen == device
    assert reason in why


def test_a_gpu_instance_whose_torch_sees_no_gpu_says_what_to_check():
    _, why = training_device(0, {"SM_NUM_GPUS": "1"})
    assert "training on the CPU" in why and "CUDA" in why and "image" in why


def _mlp_example(monkeypatch):
    """examples/mlp/train.py as a module (its smdebug import stubbed: only its device choice is tested here)."""
    import importlib.util
    import sys
    import types
    from pathlib import Path

    smdebug = types.ModuleType("smdebug")
    smdebug.pytorch = types.ModuleType("smdebug.pytorch")
    monkeypatch.setitem(sys.modules, "smdebug", smdebug)
    monkeypatch.setitem(sys.modules, "smdebug.pytorch", smdebug.pytorch)
    path = Path(__file__).resolve().parents[2] / "examples" / "mlp" / "train.py"
    spec = importlib.util.spec_from_file_location("mlp_example_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("visible", "sm_num_gpus", "expected"),
    [(1, "1", "cuda"), (0, "1", "cpu"), (1, "0", "cpu"), (1, None, "cuda"), (0, None, "cpu")],
)
def test_the_mlp_example_trains_on_the_gpu_when_the_container_has_one(monkeypatch, visible, sm_num_gpus, expected):
    import torch

    example = _mlp_example(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: visible > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: visible)
    if sm_num_gpus is None:
        monkeypatch.delenv("SM_NUM_GPUS", raising=False)
    else:
        monkeypatch.setenv("SM_NUM_GPUS", sm_num_gpus)
    assert example.pick_device().type == expected
