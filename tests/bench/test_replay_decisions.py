"""bench/replay_decisions.py: a finished run's decisions planned again from the state each was made in."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import replay_decisions  # noqa: E402

from lambdas.remediation.planning.planner import plan  # noqa: E402
from tests.lambdas.remediation.conftest import ACCOUNT_INPUT  # noqa: E402
from tests.lambdas.remediation.recorded_runs import finish, recorded, start  # noqa: E402


def finished_run(tmp_path: Path) -> Path:
    """The recorded LSTM run (three real jobs) as the local runtime leaves it: its final payload on disk."""
    run = recorded("lstm-rmsprop-rate-lowered-learned-nothing")
    state = start(run, dict(ACCOUNT_INPUT))
    for job in run["jobs"][:2]:
        state = plan(finish(state, job))
    state = finish(state, run["jobs"][2])
    run_dir = tmp_path / "lstm-evidence"
    run_dir.mkdir()
    (run_dir / "final-payload.json").write_text(json.dumps(state.to_payload()))
    return run_dir


def test_each_decision_is_planned_again_from_the_state_it_was_made_in(tmp_path):
    run_dir = finished_run(tmp_path)
    assert replay_decisions.replay(run_dir) == [
        (1, "LowerRateOnDivergence", "LowerRateOnDivergence"),
        (2, "LowerRateLearnedNothing", "LowerRateLearnedNothing"),
    ]
    cut = replay_decisions.state_at(json.loads((run_dir / "final-payload.json").read_text())["state"], 1)
    assert [attempt["number"] for attempt in cut["attempts"]] == [1] and cut["attempts"][0]["decision"] is None
    assert cut["history"]["num_retraining"] == 1 and cut["run_spec"]["hyperparameters"]["lr"] == 0.05


def test_the_summary_counts_decisions_that_differ_and_payloads_that_do_not_read(tmp_path, capsys, monkeypatch):
    run_dir = finished_run(tmp_path)
    payload = json.loads((run_dir / "final-payload.json").read_text())
    payload["state"]["attempts"][0]["decision"]["remedy"] = "TrainLonger"  # as an older planner decided
    (run_dir / "final-payload.json").write_text(json.dumps(payload))
    broken = tmp_path / "broken-evidence"
    broken.mkdir()
    (broken / "final-payload.json").write_text(json.dumps({"state": {"attempts": [{"number": 1, "decision": {}}]}}))
    monkeypatch.setattr(sys, "argv", ["replay_decisions.py", str(run_dir), str(broken)])
    replay_decisions.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["lstm-evidence 1 LowerRateOnDivergence", "lstm-evidence 2 LowerRateLearnedNothing"]
    assert json.loads(lines[-1]) == {"decisions_replayed": 2, "differ_from_recorded": 1, "runs_unreadable": 1}
