"""Zero script change in a job: plain scripts run by the job launcher in a subprocess, as SageMaker's script mode runs
them: watched with no hook in the script, refused with the reason in the failure text, and DistributedDataParallel
on two ranks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contracts.job import (
    ENTRY_POINT_HYPERPARAMETER,
    EXIT_BAD_INPUT,
    EXIT_RULE_STOP,
    EXIT_SUCCESS,
    HOOK_CONFIG_FILE_ENV,
    HOOK_CONFIG_HYPERPARAMETER,
    METRIC_DEFINITIONS_HYPERPARAMETER,
    RULE_CONFIGS_HYPERPARAMETER,
)
from contracts.rule_status import RULE_STATUS_FILE
from debugger.trial import create_trial

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[4]
STOP = '[{"name":"StopTraining"}]'
RULES = [{"RuleConfigurationName": "ExplodingTensor", "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": STOP}}]

PLAIN = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(8):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 2, (16,)))
    (loss * (float("inf") if step == 5 else 1.0)).backward()
    optimizer.step()
"""

GAN = """
import torch
from torch import nn

generator, discriminator = nn.Linear(4, 6), nn.Linear(6, 1)
g_optimizer, d_optimizer = torch.optim.Adam(generator.parameters()), torch.optim.Adam(discriminator.parameters())
for _ in range(4):
    d_optimizer.zero_grad()
    discriminator(generator(torch.randn(8, 4)).detach()).mean().backward()
    d_optimizer.step()
    g_optimizer.zero_grad()
    (-discriminator(generator(torch.randn(8, 4))).mean()).backward()
    g_optimizer.step()
"""

DDP = """
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(rank)  # each rank its own batches
for step in range(10):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 2, (16,)))
    (loss * (float("inf") if rank == 1 and step == 5 else 1.0)).backward()
    optimizer.step()
"""


def launch(
    tmp_path: Path,
    script: str,
    rules=RULES,
    extra_env: dict | None = None,
    name: str = "job",
    hook: bool = True,
    extra_arguments: tuple[str, ...] = (),
):
    """Start the launcher on ``script`` (a file in its own source directory); returns the process and its paths."""
    source = tmp_path / name / "code"
    source.mkdir(parents=True)
    (source / "train.py").write_text(textwrap.dedent(script))
    out_dir, failure = tmp_path / "tensors", tmp_path / name / "failure"
    arguments = [f"--{ENTRY_POINT_HYPERPARAMETER}", "train.py"]
    if hook:
        arguments += [
            f"--{HOOK_CONFIG_HYPERPARAMETER}", json.dumps({"HookParameters": {"save_interval": "1"}}),
            f"--{RULE_CONFIGS_HYPERPARAMETER}", json.dumps(rules),
        ]  # fmt: skip
    arguments += list(extra_arguments)
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "DEBUG_OUTPUT_DIR": str(out_dir),
        "TRAINING_FAILURE_FILE": str(failure),
        "OMP_NUM_THREADS": "1",
        **(extra_env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", f"from debugger.launcher import main; main({str(source)!r})", *arguments],
        cwd=source, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process, out_dir, failure


def finish(process) -> str:
    _, err = process.communicate(timeout=180)
    return err


def test_a_plain_script_is_watched_by_the_job_and_stopped_at_its_first_nonfinite_step(tmp_path):
    process, out_dir, failure = launch(tmp_path, PLAIN)
    log = finish(process)
    assert process.returncode == EXIT_RULE_STOP, log
    assert failure.read_text().startswith("StopTraining: rule ExplodingTensor found an issue at step 5")
    assert "zero script change: the script creates no hook" in log
    status = json.loads((out_dir / RULE_STATUS_FILE).read_text())
    assert status["rules"][0]["issue"]["step"] == 5 and status["last_step"] == 5
    assert create_trial(str(out_dir)).steps() == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("first_import", ["import smdebug.pytorch as smd", "from debugger import Hook"])
def test_a_script_importing_the_debugger_before_torch_is_watched_without_an_import_error(tmp_path, first_import):
    """isort's order puts ``smdebug`` before ``torch``: torch then finishes importing while the debugger's own module
    is half-imported, and the zero-change watcher (built from that module) waits for it instead of failing."""
    process, out_dir, failure = launch(tmp_path, first_import + "\n" + textwrap.dedent(PLAIN))
    log = finish(process)
    assert process.returncode == EXIT_RULE_STOP, log
    assert "could not be installed" not in log
    assert failure.read_text().startswith("StopTraining: rule ExplodingTensor found an issue at step 5")
    assert "zero script change: the script creates no hook" in log


def test_a_script_importing_smdebug_before_torch_and_making_its_hook_is_watched_by_its_hook(tmp_path):
    script = "import smdebug.pytorch as smd\n" + textwrap.dedent(PLAIN).replace(
        "optimizer = torch.optim",
        "hook = smd.Hook.create_from_json_file()\nhook.register_module(model)\noptimizer = torch.optim",
    )
    process, out_dir, failure = launch(tmp_path, script)
    log = finish(process)
    assert process.returncode == EXIT_RULE_STOP, log
    assert "could not be installed" not in log and "zero script change: the script creates no hook" not in log
    assert failure.read_text().startswith("StopTraining: rule ExplodingTensor found an issue at step 5")


def test_the_metric_a_plain_script_only_prints_is_read_in_the_job_with_the_run_specs_metric_definitions(tmp_path):
    """As SageMaker reads it from the log (one value per epoch line), and the script's output stays as it printed it."""
    script = PLAIN.replace('float("inf")', "1.0") + (
        "\nfor epoch, accuracy in enumerate([0.52, 0.81, 0.66]):\n    print(f'epoch={epoch} val_acc={accuracy}')\n"
    )
    definitions = [{"Name": "validation:accuracy", "Regex": r"val_acc=([0-9.]+)"}]
    process, out_dir, _ = launch(
        tmp_path, script, extra_arguments=(f"--{METRIC_DEFINITIONS_HYPERPARAMETER}", json.dumps(definitions))
    )
    out, log = process.communicate(timeout=180)
    assert process.returncode == EXIT_SUCCESS, log
    assert out.splitlines() == ["epoch=0 val_acc=0.52", "epoch=1 val_acc=0.81", "epoch=2 val_acc=0.66"]
    status = json.loads((out_dir / RULE_STATUS_FILE).read_text())
    assert status["metrics"]["validation:accuracy"]["values"] == [0.52, 0.81, 0.66]


def test_metric_definitions_that_are_not_sagemakers_shape_fail_the_job_naming_the_field(tmp_path):
    process, _, failure = launch(
        tmp_path, PLAIN, extra_arguments=(f"--{METRIC_DEFINITIONS_HYPERPARAMETER}", '[{"Name": "acc"}]')
    )
    log = finish(process)
    assert process.returncode == EXIT_BAD_INPUT, log
    assert failure.read_text().startswith("InvalidMetricDefinitions: metric_definitions[0]")


def test_without_a_debugger_configuration_the_script_runs_unwatched(tmp_path):
    process, out_dir, _ = launch(tmp_path, PLAIN.replace('float("inf")', "2.0"), hook=False)
    log = finish(process)
    assert process.returncode == EXIT_SUCCESS, log
    assert not out_dir.exists() and "zero script change" not in log


def test_a_script_the_zero_change_hook_cannot_watch_is_refused_with_the_reason(tmp_path):
    process, _, failure = launch(tmp_path, GAN)
    log = finish(process)
    assert process.returncode == EXIT_BAD_INPUT, log
    text = failure.read_text()
    assert text.startswith("ZeroScriptChangeUnsupported: the script steps 2 optimizers (Adam over 2 parameter tensors, "
                           "Adam over 2 parameter tensors) in turn, each after a backward() of its own")  # fmt: skip
    assert "smd.Hook.create_from_json_file()" in text and "Traceback" not in log


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_plain_ddp_script_on_two_ranks_stops_both_at_the_step_one_rank_explodes(tmp_path):
    port = str(free_port())
    ranks = [
        launch(tmp_path, DDP, name=f"rank{rank}", extra_env={
            "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
        })  # fmt: skip
        for rank in range(2)
    ]
    logs = [finish(process) for process, _, _ in ranks]
    for (process, _, failure), log in zip(ranks, logs, strict=True):
        assert process.returncode == EXIT_RULE_STOP, log
        assert failure.read_text().startswith("StopTraining: rule ExplodingTensor found an issue at step 5")
    out_dir = ranks[0][1]
    documents = sorted(path.relative_to(out_dir).as_posix() for path in out_dir.rglob(RULE_STATUS_FILE))
    assert documents == [RULE_STATUS_FILE]  # rank 0's, the chief's
    trial = create_trial(str(out_dir))
    assert trial.steps() == [0, 1, 2, 3, 4, 5]
    assert "gradient/0.weight" in trial.tensor_names()  # the model's own names, seen through the DDP wrapper


def test_the_jobs_debugger_configuration_is_there_while_the_script_runs_and_gone_after(tmp_path):
    """The launcher writes the hook and rule configuration files where SageMaker's would be; a local machine runs
    one job after another, so the directory goes when the job ends (it used to stay in /tmp, one per job)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    script = PLAIN.replace('float("inf")', "2.0") + (
        "\nimport os\nprint('config there:', os.path.isfile(os.environ['" + HOOK_CONFIG_FILE_ENV + "']))\n"
    )
    process, _, _ = launch(tmp_path, script, extra_env={"TMPDIR": str(scratch)})
    out, log = process.communicate(timeout=180)
    assert process.returncode == EXIT_SUCCESS, log
    assert "config there: True" in out
    assert not list(scratch.glob("remediation-debugger-*"))
