"""The evidence remedies' decision on an Overfit finding for a script without an early-stopping knob: the
early-stopping remedy is left out, and the reason given for the next remedy does not claim early stopping is on."""

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan

SCRIPT_WITHOUT_EARLY_STOPPING = {
    "source_dir": "s3://remediation-artifacts-123456789012/code/my-script.tar.gz",
    "entry_point": "train.py",
    "hyperparameters": {"lr": 0.05, "weight-decay": 0.0, "epochs": 20},
    "hyperparameter_names": {"learning_rate": "lr", "weight_decay": "weight-decay", "num_epochs": "epochs"},
    "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
}


def test_an_overfit_decision_for_a_script_without_early_stopping_does_not_claim_it(account_input, record):
    state = initial_state({**account_input, **SCRIPT_WITHOUT_EARLY_STOPPING})
    planned = plan(record(state, rule="Overfit", step=144, phase=None, evidence={}))
    decision = planned.last_attempt.decision
    assert decision.remedy == "StartWeightDecay" and planned.run_spec.hyperparameters["weight-decay"] > 0
    assert "early stopping" not in decision.reason.lower(), decision.reason
    assert "memorises its training set" in decision.reason
