"""smdebug's spot-resume state (debugger.storage.state_store): the hook records its state beside the checkpoints, and a job
restarted after its instance was reclaimed numbers its steps on from the checkpoint, in the interrupted run's debug
output, with each step once and its rules' findings kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.job import CHECKPOINT_CONFIG_FILE_ENV
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger import create_trial
from debugger.core.modes import ModeKeys
from debugger.storage.state_store import METADATA_FILE, StateStore, TrainingState, checkpoint_dir_from_config

REPO = Path(__file__).resolve().parents[3]
SPOT_JOB = Path(__file__).parent / "spot_job.py"
#: The four keys of every state smdebug's StateStore reads (smdebug/core/state_store.py, 1.0.34).
SMDEBUG_STATE_KEYS = {"training-run", "latest-global-step-saved", "latest-global-step-seen", "latest-mode-step"}


def checkpoint_config(tmp_path: Path, checkpoints: Path) -> dict[str, str]:
    """The file SageMaker writes for a job with a CheckpointConfig, and the variable naming it."""
    path = tmp_path / "checkpointconfig.json"
    path.write_text(json.dumps({"LocalPath": str(checkpoints), "S3Uri": "s3://bucket/checkpoints/job/"}))
    return {CHECKPOINT_CONFIG_FILE_ENV: str(path)}


def test_without_a_checkpoint_configuration_nothing_is_kept(tmp_path):
    store = StateStore.from_environment("job", {CHECKPOINT_CONFIG_FILE_ENV: str(tmp_path / "absent.json")})
    assert store.checkpoint_dir is None and store.last_state() is None and not store.checkpoint_updated()


def test_a_checkpoint_counts_as_written_when_the_files_count_names_or_sizes_change(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    assert checkpoint_dir_from_config(checkpoint_config(tmp_path, checkpoints)) == checkpoints
    store = StateStore(checkpoints, "job")
    assert not store.checkpoint_updated(), "an empty directory is no checkpoint"
    (checkpoints / "checkpoint-0000.pt").write_bytes(b"a")
    assert store.checkpoint_updated() and not store.checkpoint_updated()
    (checkpoints / "checkpoint-0000.pt").write_bytes(b"ab")  # same name, new size
    assert store.checkpoint_updated()
    (checkpoints / "checkpoint-0000.pt").rename(checkpoints / "checkpoint-0001.pt")  # same size, new name
    assert store.checkpoint_updated()
    (checkpoints / METADATA_FILE).write_text("[]")  # the state file itself is no checkpoint
    assert not store.checkpoint_updated()


def test_states_are_smdebugs_and_a_job_resumes_from_its_own_latest(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    store = StateStore(checkpoints, "job-b")
    store.record(TrainingState(0, 8, 9, {"TRAIN": 9, "GLOBAL": 9}, "job-b"))
    store.record(TrainingState(0, 4, 4, {"TRAIN": 4, "GLOBAL": 4}, "job-b"))
    written = json.loads((checkpoints / METADATA_FILE).read_text())
    assert all(SMDEBUG_STATE_KEYS <= set(state) for state in written)

    # another job's states (carried over by the resume remedy's copy) do not number this job's steps
    other = StateStore(checkpoints, "job-c")
    assert other.last_state() is None
    resumed = StateStore(checkpoints, "job-b").last_state()
    assert (resumed.training_run, resumed.next_step, resumed.next_mode_steps()) == (0, 10, {"TRAIN": 10, "GLOBAL": 10})

    # a state smdebug itself wrote names no job: any job resumes from it, as smdebug's hook would
    (checkpoints / METADATA_FILE).write_text(
        json.dumps([{**written[0], "latest-global-step-seen": 20}][:1]).replace(', "training-job-name": "job-b"', "")
    )
    assert StateStore(checkpoints, "job-c").last_state().next_step == 21


def test_the_debuggers_step_counts_ride_in_the_state_and_a_state_without_them_reads_as_before(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    counts = {"optimizer-updates": 4, "training-steps": 4, "optimizer-observed": 1}
    StateStore(checkpoints, "job").record(TrainingState(0, 11, 11, {"TRAIN": 11, "GLOBAL": 11}, "job", counts))
    (written,) = json.loads((checkpoints / METADATA_FILE).read_text())
    assert written["step-counts"] == counts and SMDEBUG_STATE_KEYS <= set(written)
    assert StateStore(checkpoints, "job").last_state().step_counts == counts
    # smdebug's own state (it copies its four keys only), or counts that are not counts: resumed as before
    for kept in (None, {"optimizer-updates": -1}, {"optimizer-updates": "4"}, [4, 4]):
        state = {key: written[key] for key in SMDEBUG_STATE_KEYS} | ({} if kept is None else {"step-counts": kept})
        (checkpoints / METADATA_FILE).write_text(json.dumps([state]))
        assert StateStore(checkpoints, "job").last_state().step_counts is None


def test_real_smdebug_resumes_from_a_state_holding_the_step_counts(tmp_path):
    """smdebug 1.0.34's StateStore (the reference environment of tests/smdebug/differential.py) reads a state our hook
    wrote, the debugger's counts in it, as its own: its hook resumes from the same steps."""
    reference = REPO / ".venv-smdebug-reference"
    if not (reference / ".installed").exists():
        pytest.skip("the smdebug 1.0.34 reference environment is not built: run `make smdebug-reference`")
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    counts = {"optimizer-updates": 4, "training-steps": 4, "optimizer-observed": 1}
    store = StateStore(checkpoints, "job")
    store.record(TrainingState(0, 11, 11, {"TRAIN": 11, "GLOBAL": 11}, "job", counts))
    store.record(TrainingState(0, 20, 23, {"TRAIN": 23, "GLOBAL": 23}, "job", {**counts, "optimizer-updates": 8}))
    probe = (
        "import json, smdebug; from smdebug.core.state_store import StateStore; "
        "print(json.dumps([smdebug.__version__, StateStore().get_last_saved_state()]))"
    )
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # never ours: theirs
    read = subprocess.run(
        [str(reference / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**environment, **checkpoint_config(tmp_path, checkpoints)},
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-3000:]
    version, state = json.loads(read.stdout.strip().splitlines()[-1])
    assert version == "1.0.34" and state == {
        "training-run": 0, "latest-global-step-saved": 20, "latest-global-step-seen": 23,
        "latest-mode-step": {"TRAIN": 23, "GLOBAL": 23},
    }  # fmt: skip


def test_an_unreadable_state_file_starts_the_steps_from_zero(tmp_path, caplog):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / METADATA_FILE).write_text("{not json")
    assert StateStore(checkpoints, "job").last_state() is None
    assert "unreadable" in caplog.text


def run_job(out_dir: Path, env: dict[str, str], profile: str, die_at: int, nan_at: str) -> subprocess.CompletedProcess:
    """spot_job.py: 4 epochs of 5 training steps, a checkpoint after each epoch."""
    return subprocess.run(
        [sys.executable, str(SPOT_JOB), str(out_dir), profile, "4", "5", str(die_at), nan_at],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip


def job_environment(tmp_path: Path, checkpoints: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "TRAINING_JOB_NAME": "spot-job-1",
        "TRAINING_CHECKPOINT_DIR": str(checkpoints),
        **checkpoint_config(tmp_path, checkpoints),
    }


def trained_steps(output: str) -> list[int]:
    return [int(line.split()[1].removeprefix("step=")) for line in output.splitlines() if line.startswith("trained ")]


@pytest.mark.training
def test_a_restarted_job_goes_on_from_its_checkpoint_with_each_step_once_and_its_findings_kept(tmp_path):
    checkpoints, out_dir = tmp_path / "checkpoints", tmp_path / "debug"
    env = job_environment(tmp_path, checkpoints)
    # The instance is reclaimed after step 12: two checkpoints written (after steps 4 and 9), and ExplodingTensor
    # (no StopTraining action) has found the NaN gradient of step 11.
    interrupted = run_job(out_dir, env, "native", die_at=12, nan_at="11,17")
    assert interrupted.returncode == 137, interrupted.stderr[-3000:]
    assert trained_steps(interrupted.stdout) == list(range(13))
    first = RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text())
    fired = {rule.RuleConfigurationName: rule for rule in first.issues_found()}
    assert list(fired) == ["ExplodingTensor"] and fired["ExplodingTensor"].issue.step == 11
    assert not first.training_ended

    restarted = run_job(out_dir, env, "native", die_at=-1, nan_at="11,17")
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert "resuming from checkpoint-0001.pt at epoch 2" in restarted.stdout
    # the hook numbers the restarted run's steps from the state it kept with the checkpoint of step 9
    assert trained_steps(restarted.stdout) == list(range(10, 20))
    states = json.loads((checkpoints / METADATA_FILE).read_text())
    assert [(state["training-run"], state["latest-global-step-seen"]) for state in states] == [(0, 4), (0, 9), (1, 14)]

    trial = create_trial(out_dir)
    assert trial.steps() == list(range(20)), "each step once: the restarted run's, from step 10 on"
    final = trial.rule_status()
    assert final.training_ended and final.last_step == 19
    found = {rule.RuleConfigurationName: rule for rule in final.issues_found()}
    # the interrupted run's finding is kept as it was, not found again when step 11 is redone ...
    assert found["ExplodingTensor"].issue.step == 11
    assert found["ExplodingTensor"].LastModifiedTime == fired["ExplodingTensor"].LastModifiedTime
    # ... and a new one after the restart is found
    assert found["LateExplodingTensor"].issue.step == 17
    assert final.evidence.initial_loss == first.evidence.initial_loss, "the job's initial loss is the first run's"


@pytest.mark.training
@pytest.mark.parametrize("made", ["smdebug", "smd-code", "smd-json", "smd-get-hook"])
def test_smdebugs_profile_resumes_each_modes_steps(tmp_path, made):
    """smdebug's profile counts each epoch's evaluation as an EVAL step: 6 global steps per epoch. Every way a script
    written for smdebug makes its hook (in code, from the job's JSON file, smd.get_hook) resumes in the interrupted
    run's debug output, as smdebug does (it refuses only an out_dir whose run ended)."""
    checkpoints, out_dir = tmp_path / "checkpoints", tmp_path / "debug"
    env = job_environment(tmp_path, checkpoints)
    interrupted = run_job(out_dir, env, made, die_at=14, nan_at="12")
    assert interrupted.returncode == 137, interrupted.stderr[-3000:]
    fired = RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text()).issues_found()
    assert [(rule.RuleConfigurationName, rule.issue.step) for rule in fired] == [("ExplodingTensor", 12)]
    restarted = run_job(out_dir, env, made, die_at=-1, nan_at="12")
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    final = RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text())
    assert final.training_ended and [(rule.RuleConfigurationName, rule.issue.step) for rule in final.issues_found()] == [
        ("ExplodingTensor", 12)
    ], "the interrupted run's finding is kept, not found again when step 12 is redone"
    assert trained_steps(restarted.stdout) == [12, 13, 14, 15, 16, 18, 19, 20, 21, 22]
    state = json.loads((checkpoints / METADATA_FILE).read_text())[1]
    assert state["latest-global-step-seen"] == 11 and state["latest-mode-step"] == {"TRAIN": 9, "EVAL": 1, "GLOBAL": 11}
    trial = create_trial(out_dir)
    assert trial.steps() == list(range(24))
    assert trial.steps(mode=ModeKeys.TRAIN) == list(range(20)) and trial.steps(mode=ModeKeys.EVAL) == list(range(4))
    assert [trial.mode_modestep(step) for step in (11, 12, 17)] == [
        (ModeKeys.EVAL, 1), (ModeKeys.TRAIN, 10), (ModeKeys.EVAL, 2)
    ]  # fmt: skip


def test_a_checkpoint_written_after_the_last_step_is_recorded_before_another_step_begins(tmp_path, monkeypatch):
    """The instance may be reclaimed between a checkpoint and the next step (an epoch's end, the next one's set-up):
    the checkpoint watch records the state the next step's begin would have, with the steps seen so far."""
    import threading

    import torch
    from torch import nn

    from debugger import Hook
    from debugger.hook.checkpoint_watch import CheckpointWatch

    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    for key, value in checkpoint_config(tmp_path, checkpoints).items():
        monkeypatch.setenv(key, value)
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, out_dir=tmp_path / "debug", job_name="j")
    hook._checkpoint_watch.stop()  # the test looks itself, at the moment it chooses
    model, criterion = nn.Linear(3, 2), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        criterion(model(torch.randn(4, 3)), torch.randint(0, 2, (4,))).backward()
        optimizer.step()
    hook._record_checkpoint_state()
    assert not (checkpoints / METADATA_FILE).exists(), "no checkpoint yet"
    (checkpoints / "checkpoint-0000.pt.tmp").write_bytes(b"mod")
    hook._record_checkpoint_state()  # what the watch does between steps: a file still being written ...
    (checkpoints / "checkpoint-0000.pt.tmp").write_bytes(b"model")
    hook._record_checkpoint_state()
    (checkpoints / "checkpoint-0000.pt.tmp").rename(checkpoints / "checkpoint-0000.pt")
    hook._record_checkpoint_state()
    assert not (checkpoints / METADATA_FILE).exists(), "... nor one not renamed yet is taken for a checkpoint"
    hook._record_checkpoint_state()  # the same files at two looks in a row: settled
    (state,) = json.loads((checkpoints / METADATA_FILE).read_text())
    assert state["latest-global-step-seen"] == 2 and state["training-run"] == 0
    optimizer.zero_grad()
    criterion(model(torch.randn(4, 3)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()
    hook.close()
    assert len(json.loads((checkpoints / METADATA_FILE).read_text())) == 1, "recorded once, not again at step 3"
    assert create_trial(tmp_path / "debug").steps() == [0, 1, 2, 3]

    looked = threading.Event()
    watch = CheckpointWatch(looked.set, poll_seconds=0.01)
    assert looked.wait(timeout=60)
    watch.stop()
