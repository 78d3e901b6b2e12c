"""The random repair zoo without training: the drawing (bench/zoo_random.py) and the report's arithmetic
(bench/zoo_random_run.py), as `python bench/repair_zoo.py --random N --seed S` uses them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import zoo_random  # noqa: E402
import zoo_random_report  # noqa: E402
import zoo_random_run  # noqa: E402

from remediate.local_inputs import prepare_run  # noqa: E402
from remediate.main import build_parser  # noqa: E402

DEVELOPMENT_SEED = 5  # below 1000: seeds 1000 and up are kept for the report


def test_the_drawing_is_the_same_for_the_same_seed_and_a_shorter_draw_is_a_prefix():
    first = [configuration.to_json() for configuration in zoo_random.draw(DEVELOPMENT_SEED, 40)]
    again = [configuration.to_json() for configuration in zoo_random.draw(DEVELOPMENT_SEED, 40)]
    assert first == again
    assert [c.to_json() for c in zoo_random.draw(DEVELOPMENT_SEED, 10)] == first[:10]
    other = [configuration.to_json() for configuration in zoo_random.draw(DEVELOPMENT_SEED + 1, 40)]
    assert [c["base"] for c in other] != [c["base"] for c in first]


def test_a_moderate_draw_covers_every_fault_kind_every_script_style_and_both_data_sets():
    drawn = zoo_random.draw(DEVELOPMENT_SEED, 120)
    assert {c.fault for c in drawn} == set(zoo_random.FAULT_KINDS)
    assert {c.style for c in drawn} == set(zoo_random.STYLES) and len(zoo_random.STYLES) >= 3
    assert {c.dataset for c in drawn} == set(zoo_random.DATASETS)
    # each configuration's fault is one the style can express, and its healthy twin is the base without it
    for configuration in drawn:
        assert configuration.fault in zoo_random.STYLES[configuration.style].faults
        assert configuration.hyperparameters(healthy=True) != configuration.hyperparameters() or \
            configuration.data_faults() != configuration.data_faults(healthy=True)
        assert configuration.data_faults(healthy=True) == {}


def test_each_fault_changes_what_it_says_on_the_script_own_argument_names():
    drawn = {c.fault: c for c in zoo_random.draw(DEVELOPMENT_SEED, 120)}
    high = drawn["lr_high"]
    lr = zoo_random.STYLES[high.style].knobs["lr"]
    factor = high.hyperparameters()[lr] / high.hyperparameters(healthy=True)[lr]
    assert round(factor) in (10, 100, 1000)
    few = drawn["few_epochs"]
    epochs = zoo_random.STYLES[few.style].knobs["epochs"]
    assert few.hyperparameters()[epochs] == 1 and few.hyperparameters(healthy=True)[epochs] == zoo_random.EPOCHS
    noisy = drawn["label_noise"]
    assert noisy.hyperparameters() == noisy.hyperparameters(healthy=True) and noisy.data_faults()["label_noise"] >= 0.4


def test_label_noise_and_a_rare_class_touch_the_training_labels_only():
    clean = zoo_random.make_data("digits", 3)
    rare = zoo_random.make_data("digits", 3, rare_class=0.02)
    noisy = zoo_random.make_data("digits", 3, label_noise=0.4)
    assert (rare[3] == clean[3]).all() and (noisy[3] == clean[3]).all()  # the held-out labels are untouched
    assert (rare[1] == 0).sum() <= max(1, int((clean[1] == 0).sum() * 0.02))
    assert 0.25 < (noisy[1] != clean[1]).mean() < 0.4  # 40% redrawn, a tenth of them to the same label


@pytest.mark.parametrize("healthy", [False, True], ids=["faulty", "healthy-twin"])
def test_every_drawn_run_spec_passes_the_check_remediate_local_run_applies(tmp_path, healthy):
    """The check the CLI runs before anything starts (remediate.local_inputs.prepare_run): a refused run_spec would
    be a zoo row that measures nothing."""
    drawn = zoo_random.draw(DEVELOPMENT_SEED, 24)
    assert {c.style for c in drawn} == set(zoo_random.STYLES)
    for configuration in drawn:
        spec_file = tmp_path / f"{configuration.name}-{healthy}.json"
        spec_file.write_text(json.dumps(configuration.execution_input(healthy)))
        channels = zoo_random.write_channels(configuration, healthy, tmp_path / "data")
        argv = ["local", "run", "--run-spec", str(spec_file)]
        for name, directory in channels.items():
            argv += ["--channel", f"{name}={directory}"]
        prepared = prepare_run(build_parser().parse_args(argv))  # raises BadInput naming the field
        try:
            assert prepared.policy == "evidence"
        finally:
            prepared.scratch.cleanup()


def test_no_drawn_configuration_sets_rules_rule_parameters_or_remedies():
    for configuration in zoo_random.draw(DEVELOPMENT_SEED, 120):
        for healthy in (False, True):
            spec = configuration.execution_input(healthy)
            assert "rules" not in spec and "remedies" not in spec and spec["policy"] == "evidence"
            assert not any("rule" in key for key in spec)


def test_the_healthy_twins_are_an_even_share_of_the_draw():
    drawn = zoo_random.draw(DEVELOPMENT_SEED, 12)
    twins = zoo_random.healthy_twins(drawn, 0.25)
    assert [c.index for c in twins] == [0, 4, 8]
    assert zoo_random.healthy_twins(drawn, 0) == []


def test_the_random_baseline_draws_evidence_changes_and_moves_in_the_space_on_the_script_own_names():
    configuration = next(c for c in zoo_random.draw(DEVELOPMENT_SEED, 120) if c.style == "logline")
    hyperparameters = configuration.hyperparameters()
    evidence = zoo_random_run.evidence_changes(configuration, hyperparameters)
    assert evidence and all(set(after) == set(hyperparameters) for after in evidence.values())
    assert any(after["learning-rate"] != hyperparameters["learning-rate"] for after in evidence.values())
    moves = zoo_random_run.space_changes(configuration, hyperparameters)
    assert "epochs x2" in moves and moves["epochs x2"]["n-epochs"] == 2 * hyperparameters["n-epochs"]
    import random

    picks = [zoo_random_run.random_change(configuration, hyperparameters, random.Random(1))[0] for _ in range(2)]
    assert picks[0] == picks[1]  # the same stream, the same change


def _row(launches, met, steps, rules=(), held_out=True, first_rule=None):
    return {"launches": launches, "met_objective": met, "training_steps": steps, "rules_fired": list(rules),
            "first_rule": first_rule, "objective_value": 0.95 if met else None,
            "held_out": ({"value": 0.95, "meets": held_out} if met else None)}


def test_the_summary_arithmetic_on_hand_given_rows():
    evidence = zoo_random_report.EVIDENCE
    named = {**_row(1, False, 100), "end_reason": "... missed it. The training labels are imbalanced: class 0 made 24"}
    cases = [  # (fault, evidence row, random row, reference row)
        ("lr_high", _row(2, True, 120, ["ExplodingTensor"]), _row(3, True, 300), _row(1, True, 100)),  # ratio 1.2
        ("init_scale", _row(2, True, 160, ["LossNotDecreasing"]), _row(5, False, 500), _row(1, True, 100)),  # 1.6
        ("lr_high", _row(5, False, 400, ["ExplodingTensor"]), _row(5, False, 450), None),  # not repaired
        ("activation", _row(1, True, 100), _row(1, True, 100), None),  # the fault left the objective met
        ("lr_frozen", _row(5, True, 200, held_out=False), _row(2, True, 150), _row(1, True, 100)),  # false success, 2.0
        ("rare_class", named, _row(5, False, 500), None),  # a data fault not repaired, named: 1 launch
        ("label_noise", {**_row(3, False, 300), "end_reason": "No remedy left"}, _row(5, False, 500), None),
    ]
    results = []
    for fault, evidence_row, random_row, reference in cases:
        runs = {evidence: evidence_row, zoo_random_report.RANDOM: random_row}
        results.append({"configuration": {"fault": fault}, "runs": runs,
                        "verdict": zoo_random_report.verdict(runs, reference, fault)})
    twins = [_row(1, True, 100), _row(2, True, 150, ["VanishingGradient"]), {"error": "exit 3"}]
    summary = zoo_random_report.totals(results, twins, zoo_random_report.POLICIES)
    assert summary["configurations"] == 7 and summary["failing"] == 6 and summary["fault_ineffective"] == 1
    assert summary[evidence]["repaired"] == 3 and summary[evidence]["repair_rate"] == 0.5
    assert summary[evidence]["repaired_other_faults"] == 3 and summary[evidence]["failing_other_faults"] == 4
    assert summary[evidence]["data_faults_missed"] == 2 and summary[evidence]["data_faults_named"] == 1
    assert summary[evidence]["data_faults_named_median_launches"] == 1
    assert summary[evidence]["median_launches"] == 2  # of 2, 2 and 5 (their mean is 3)
    assert summary[evidence]["compute_ratio_median"] == 1.6 and summary[evidence]["compute_ratio_max"] == 2.0
    assert summary[evidence]["compute_ratio_within_target"] == 1 and summary[evidence]["compute_ratios_measured"] == 3
    assert summary[evidence]["false_successes"] == 1
    assert summary["random"]["repaired"] == 2 and summary["random"]["repair_rate"] == 0.333
    assert summary["random"]["median_launches"] == 2.5 and summary["random"]["false_successes"] == 0
    assert summary["healthy_twins_run"] == 3 and summary["false_alarms"] == 1 and summary["false_alarm_rate"] == 0.5


def test_a_met_claim_is_checked_against_the_held_out_accuracy_the_script_logged(tmp_path):
    configuration = next(c for c in zoo_random.draw(DEVELOPMENT_SEED, 120)
                         if c.style == "smd_text_lr" and c.dataset == "digits")
    log = tmp_path / "jobs" / "job-2" / "training.log"
    log.parent.mkdir(parents=True)
    log.write_text("Epoch 1/12 - loss 1.2 - validation accuracy 93.10%\nEpoch 2/12 - loss 1.1 - validation accuracy 88.50%\n")
    row = {"met_objective": True, "run_dir": str(tmp_path), "successful_job": "job-2"}
    assert zoo_random_run.held_out_check(configuration, row) == {"value": 0.885, "meets": False}
    assert zoo_random_report.verdict({"evidence": {**row, "launches": 2, "held_out": {"value": 0.885, "meets": False}}},
                                  None)["evidence_false_success"] is True
    assert zoo_random_run.held_out_check(configuration, {**row, "successful_job": "job-9"})["meets"] is False
    assert zoo_random_run.held_out_check(configuration, {"met_objective": False}) is None


def test_the_command_refuses_a_random_run_without_a_seed_and_unknown_policies():
    zoo = [sys.executable, str(ROOT / "bench" / "repair_zoo.py")]
    no_seed = subprocess.run([*zoo, "--random", "3"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert no_seed.returncode == 2 and "--seed" in no_seed.stderr
    anchor = subprocess.run([*zoo, "--random", "3", "--seed", "2", "--policies", "anchor"], capture_output=True,
                            text=True, cwd=ROOT, timeout=60)
    assert anchor.returncode == 2 and "evidence, random" in anchor.stderr


# --------------------------------------------------------------------------- the widened space (v2)

V2_SEED = 2000  # a development seed of the v2 space

#: sha256 of the v1 drawing of seeds 5 and 1987 (60 configurations each: names, bases, faults, the scripts' arguments,
#: the run_specs without their checkout path, descriptions, data keys), taken on the code before v2 was added.
V1_FINGERPRINTS = {5: "766b1ec1b72fd4fbdbad363ad28aaaa1e42e33068ad56c45fe694106b69c042b",
                   1987: "80347736de2f760c7e830948abcbd5ca36e8c175799086f82ce7e528830155a1"}


@pytest.mark.parametrize("seed", sorted(V1_FINGERPRINTS))
def test_the_v1_space_draws_exactly_what_it_drew_before_the_space_was_widened(seed):
    import hashlib

    drawn = [(c.name, c.style, c.base, c.fault, c.fault_change, c.hyperparameters(), c.hyperparameters(True),
              {key: value for key, value in c.execution_input().items() if key != "source_dir"}, c.describe(),
              zoo_random.channel_key(c, False)) for c in zoo_random.draw(seed, 60)]
    assert hashlib.sha256(json.dumps(drawn, sort_keys=True).encode()).hexdigest() == V1_FINGERPRINTS[seed]
    assert zoo_random.draw(seed, 60) == zoo_random.draw(seed, 60, "v1")
    assert all(c.style in zoo_random.STYLES and "space" not in c.to_json() for c in zoo_random.draw(seed, 60))


def test_the_v2_drawing_is_deterministic_a_prefix_and_its_own_stream():
    first = [c.to_json() for c in zoo_random.draw(V2_SEED, 40, "v2")]
    assert first == [c.to_json() for c in zoo_random.draw(V2_SEED, 40, "v2")]
    assert [c.to_json() for c in zoo_random.draw(V2_SEED, 12, "v2")] == first[:12]
    assert [c["base"] for c in first] != [c.to_json()["base"] for c in zoo_random.draw(V2_SEED + 1, 40, "v2")]
    assert {c["space"] for c in first} == {"v2"} and all(c["name"].startswith(f"s{V2_SEED}v2-") for c in first)
    with pytest.raises(ValueError, match="space must be one of v1, v2"):
        zoo_random.draw(V2_SEED, 3, "v3")


def test_a_v2_draw_covers_every_family_every_style_and_every_fault_kind_the_style_can_express():
    drawn = zoo_random.draw(V2_SEED, 400, "v2")
    assert {c.family for c in drawn} == set(zoo_random.FAMILIES_V2)
    assert {c.style for c in drawn} == set(zoo_random.ALL_STYLES) and len(zoo_random.ALL_STYLES) >= 5
    assert {c.fault for c in drawn} == set(zoo_random.FAULT_KINDS_V2)
    pairs = {(c.style, c.fault) for c in drawn}
    for name in zoo_random.NEW_STYLES:
        assert {fault for style, fault in pairs if style == name} == set(zoo_random.ALL_STYLES[name].faults), name
    for configuration in drawn:
        assert configuration.fault in zoo_random.ALL_STYLES[configuration.style].faults
        assert (configuration.hyperparameters(True) != configuration.hyperparameters()
                or configuration.data_faults() != configuration.data_faults(True))
        assert configuration.data_faults(True) == {}
    regression = [c for c in drawn if c.family == "regression"]
    assert {c.base["metric"] for c in regression} == {"rmse", "mae"} and {c.base["loss"] for c in regression} == {
        "mse", "huber"}
    assert {c.base["dataset"] for c in regression} == {"diabetes", "friedman1"}
    recurrent = [c for c in drawn if c.family == "recurrent"]
    assert {c.base["cell"] for c in recurrent} == {"gru", "lstm"}
    assert {c.base["optimizer"] for c in recurrent} == {"rmsprop", "adam"}
    assert {c.hyperparameters()["optimizer"] for c in recurrent} == {"sgd", "rmsprop", "adam"}
    assert {c.base["clip"] for c in recurrent} == {0.0, 1.0}


def _first(fault, family=None):
    return next(c for c in zoo_random.draw(V2_SEED, 400, "v2") if c.fault == fault and family in (None, c.family))


def test_the_recurrent_faults_change_the_rate_and_the_clipping_on_the_script_own_names():
    diverge = _first("diverge_no_nan")
    after, before = diverge.hyperparameters(), diverge.hyperparameters(healthy=True)
    assert (after["optimizer"], after["lr"], after["clip"]) in (("sgd", 2.0, 0.0), ("rmsprop", 0.5, 0.0))
    assert (before["optimizer"], before["lr"]) in (("adam", 0.01), ("rmsprop", 0.005))
    exploding = _first("exploding_recurrent")
    after, before = exploding.hyperparameters(), exploding.hyperparameters(healthy=True)
    assert before["clip"] == 1.0 and after["clip"] == 0.0 and after["lr"] == pytest.approx(before["lr"] * 10)


def test_the_regression_faults_change_the_targets_and_a_target_scale_the_objective_with_them():
    unscaled = _first("targets_unscaled")
    assert unscaled.execution_input()["objective"]["type"] == "Minimize"
    assert unscaled.objective_target() == pytest.approx(1000 * unscaled.objective_target(healthy=True))
    healthy = zoo_random.make_data(unscaled.dataset, unscaled.base["seed"])
    scaled = zoo_random.make_data(unscaled.dataset, unscaled.base["seed"], **unscaled.data_faults())
    assert abs(float(healthy[1].std()) - 1) < 1e-3  # the targets come standardised
    assert (scaled[1] == healthy[1] * 1000).all() and (scaled[3] == healthy[3] * 1000).all()
    nan = _first("targets_nan")
    faulty = zoo_random.make_data(nan.dataset, nan.base["seed"], **nan.data_faults())
    clean = zoo_random.make_data(nan.dataset, nan.base["seed"])
    import numpy as np

    assert np.isnan(faulty[1]).sum() == max(1, int(len(faulty[1]) * 0.01)) and not np.isnan(faulty[3]).any()
    assert (faulty[3] == clean[3]).all() and not np.isnan(faulty[0]).any()


@pytest.mark.parametrize("healthy", [False, True], ids=["faulty", "healthy-twin"])
def test_every_v2_style_and_fault_makes_a_run_spec_remediate_local_run_accepts(tmp_path, healthy):
    drawn = zoo_random.draw(V2_SEED, 400, "v2")
    one_each = {}  # one configuration of each style, and one of each fault kind
    for configuration in drawn:
        one_each.setdefault(configuration.style, configuration)
        one_each.setdefault(configuration.fault, configuration)
    chosen = {configuration.name: configuration for configuration in one_each.values()}
    for configuration in chosen.values():
        spec_file = tmp_path / f"{configuration.name}-{healthy}.json"
        spec = configuration.execution_input(healthy)
        assert "rules" not in spec and "remedies" not in spec and spec["policy"] == "evidence"
        spec_file.write_text(json.dumps(spec))
        channels = zoo_random.write_channels(configuration, healthy, tmp_path / "data")
        argv = ["local", "run", "--run-spec", str(spec_file)]
        for name, directory in channels.items():
            argv += ["--channel", f"{name}={directory}"]
        prepared = prepare_run(build_parser().parse_args(argv))
        try:
            assert prepared.policy == "evidence"
        finally:
            prepared.scratch.cleanup()


def test_a_minimize_claim_is_checked_against_the_error_the_regression_script_logged(tmp_path):
    configuration = next(c for c in zoo_random.draw(V2_SEED, 400, "v2") if c.style == "regression_plain"
                         and c.base["metric"] == "rmse" and c.fault != "targets_unscaled")
    target = configuration.objective_target()
    log = tmp_path / "jobs" / "job-1" / "training.log"
    log.parent.mkdir(parents=True)
    log.write_text(f"epoch 0 train_loss 0.9 validation:rmse {target + 0.2:.4f} validation:mae 0.1\n"
                   f"epoch 1 train_loss 0.5 validation:rmse {target - 0.01:.4f} validation:mae 0.1\n")
    row = {"met_objective": True, "run_dir": str(tmp_path), "successful_job": "job-1"}
    assert zoo_random_run.held_out_check(configuration, row) == {"value": round(target - 0.01, 4), "meets": True}
    log.write_text(f"epoch 1 train_loss 0.5 validation:rmse {target + 0.01:.4f} validation:mae 0.0\n")
    assert zoo_random_run.held_out_check(configuration, row)["meets"] is False


def test_the_summary_is_broken_down_per_family_and_per_fault():
    evidence, random_ = zoo_random_report.EVIDENCE, zoo_random_report.RANDOM
    cases = [  # (family, fault, evidence row, random row, reference row)
        ("regression", "targets_nan", _row(1, False, 10), _row(5, False, 500), None),
        ("regression", "lr_high", _row(2, True, 150, ["ExplodingTensor"]), _row(4, True, 400), _row(1, True, 100)),
        ("recurrent", "lr_high", _row(3, True, 300), _row(5, False, 500), _row(1, True, 100)),
        ("recurrent", "diverge_no_nan", _row(1, True, 100), _row(1, True, 100), None),  # left the objective met
    ]
    results = []
    for family, fault, evidence_row, random_row, reference in cases:
        runs = {evidence: evidence_row, random_: random_row}
        results.append({"configuration": {"fault": fault}, "family": family, "fault": fault, "runs": runs,
                        "verdict": zoo_random_report.verdict(runs, reference, fault)})
    twins = [{**_row(1, True, 100), "family": "regression"}, {**_row(1, True, 90, ["VanishingGradient"]),
                                                              "family": "recurrent"}]
    summary = zoo_random_report.totals(results, twins, zoo_random_report.POLICIES)
    regression, recurrent = summary["by_family"]["regression"], summary["by_family"]["recurrent"]
    assert regression["failing"] == 2 and regression[evidence]["repaired"] == 1
    assert regression[evidence]["repair_rate"] == 0.5 and regression[evidence]["compute_ratio_median"] == 1.5
    assert regression[random_]["repaired"] == 1 and regression["false_alarms"] == 0
    assert recurrent["failing"] == 1 and recurrent["fault_ineffective"] == 1 and recurrent["false_alarms"] == 1
    assert recurrent[evidence]["median_launches"] == 3 and recurrent[random_]["repair_rate"] == 0.0
    by_fault = summary["by_fault"]
    assert by_fault["lr_high"]["failing"] == 2 and by_fault["lr_high"][evidence]["repaired"] == 2
    assert by_fault["lr_high"][random_]["repaired"] == 1 and by_fault["targets_nan"][evidence]["repaired"] == 0
    table = zoo_random_report.markdown(results and [{**r, "configuration": {"name": r["fault"], "description": "d",
                                                                             "fault": r["fault"], "fault_change": {}}}
                                                    for r in results], [], zoo_random_report.POLICIES, summary)
    assert "| regression | 2 | 2 | 1 of 2 / 2 / 0 | 1 of 2 / 4 / 0 | 1.5 | 0 / 1 |" in table


def test_the_command_takes_a_space_with_random_only():
    zoo = [sys.executable, str(ROOT / "bench" / "repair_zoo.py")]
    alone = subprocess.run([*zoo, "--space", "v2"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert alone.returncode == 2 and "--space" in alone.stderr and "--random N" in alone.stderr
    unknown = subprocess.run([*zoo, "--random", "2", "--seed", "1", "--space", "v9"], capture_output=True, text=True,
                             cwd=ROOT, timeout=60)
    assert unknown.returncode == 2 and "v1" in unknown.stderr and "v2" in unknown.stderr


def test_a_printed_report_becomes_one_csv_row_per_configuration_and_policy_and_per_healthy_twin(tmp_path):
    configuration = zoo_random.draw(V2_SEED, 1, "v2")[0]
    runs = {"evidence": {**_row(2, True, 120, ["ExplodingTensor"]), "remedies": ["LowerLearningRate"]},
            "random": _row(5, False, 500)}
    result = {"configuration": configuration.to_json(), "family": configuration.family, "fault": configuration.fault,
              "runs": runs, "reference": _row(1, True, 100),
              "verdict": zoo_random_report.verdict(runs, _row(1, True, 100), configuration.fault)}
    twin = {**_row(1, True, 90, ["VanishingGradient"]), "configuration": configuration.name,
            "family": configuration.family, "fault": configuration.fault}
    report = {"seeds": [{"summary": {"seed": V2_SEED, "space": "v2", "policies": ["evidence", "random"]},
                         "configurations": [result], "healthy_twins": [twin]}]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert zoo_random_report.main([str(path), "--csv", str(tmp_path / "out.csv")]) == 0
    import csv

    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert [row["policy"] for row in rows] == ["evidence", "random", "healthy_twin"]
    evidence = rows[0]
    assert evidence["family"] == configuration.family and evidence["repaired"] == "True"
    assert evidence["compute_ratio"] == "1.2" and evidence["remedies"] == "LowerLearningRate"
    assert rows[1]["repaired"] == "False" and rows[2]["rules_fired"] == "VanishingGradient"
    report["seeds"][0]["summary"] = {"seed": V2_SEED, "space": "v2", "command": "c", **zoo_random_report.totals(
        [result], [twin], zoo_random_report.POLICIES), "policies": list(zoo_random_report.POLICIES)}
    path.write_text(json.dumps(report))
    summary_csv = tmp_path / "summary.csv"
    for _ in range(2):  # a second report appends under the same header
        assert zoo_random_report.main([str(path), "--summary-csv", str(summary_csv), "--commit", "abc1234"]) == 0
    rows = list(csv.DictReader(summary_csv.open()))
    assert len(rows) == 2 * 2 * 3  # twice: (all, its family, its fault) x (evidence, random)
    first = {(row["group_kind"], row["policy"]): row for row in rows[:6]}
    assert first[("all", "evidence")]["repaired"] == "1" and first[("all", "random")]["repaired"] == "0"
    assert first[("family", "evidence")]["group"] == configuration.family
    assert first[("fault", "evidence")]["false_alarms"] == "1" and first[("all", "evidence")]["commit"] == "abc1234"


def test_nan_targets_are_a_data_fault_judged_by_whether_the_run_named_them():
    evidence = zoo_random_report.EVIDENCE
    quiet = {**_row(5, False, 40, ["ExplodingTensor"] * 5), "end_reason": "ExplodingTensor fired at step 7: 300 NaN"}
    named = {**_row(1, False, 1, ["ExplodingTensor"]), "end_reason": "The training targets hold NaN at step 0: ..."}
    results = []
    for row in (quiet, named):
        runs = {evidence: row}
        results.append({"configuration": {"fault": "targets_nan"}, "family": "regression", "fault": "targets_nan",
                        "runs": runs, "verdict": zoo_random_report.verdict(runs, None, "targets_nan")})
    assert [r["verdict"]["evidence_named_data_fault"] for r in results] == [False, True]
    summary = zoo_random_report.totals(results, [], (evidence,))
    assert summary[evidence]["failing_other_faults"] == 0 and summary[evidence]["data_faults_named"] == 1


def test_a_report_is_judged_again_by_the_current_arithmetic():
    configuration = zoo_random.draw(V2_SEED, 400, "v2")
    nan = next(c for c in configuration if c.fault == "targets_nan")
    runs = {"evidence": {**_row(5, False, 40), "end_reason": "The targets hold NaN"}}
    stale = {"configuration": nan.to_json(), "family": nan.family, "runs": runs, "verdict": {"failing": True}}
    report = {"seeds": [{"summary": {"seed": V2_SEED, "space": "v2", "policies": ["evidence"], "command": "c"},
                         "configurations": [stale], "healthy_twins": []}]}
    again = zoo_random_report.rejudge(report)["seeds"][0]
    assert again["configurations"][0]["verdict"]["evidence_named_data_fault"] is True
    assert again["summary"]["by_fault"]["targets_nan"]["failing"] == 1 and again["summary"]["command"] == "c"
