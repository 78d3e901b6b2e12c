"""The evidence remedies' decision on an Overfit finding for a script without an early-stopping knob: the
early-stopping remedy is left out, and the reason given for the next remedy does not claim early stopping is on."""

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, facts_of

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
    assert (decision.remedy, decision.cause) == ("StartWeightDecay", "Overfit")
    assert changes_of(decision) == {"weight-decay": (0.0, 0.0001)} and facts_of(decision) == {}
    assert decision.skipped == []  # the early-stopping remedy is not in the ladder of a script without the knob
    # the whole reason: nothing in it claims early stopping
    assert decision.reason == (
        "Overfit fired at step 144 (tensor gradient_norm, the rule's value nan). Remedy 1 of 2 for Overfit in the "
        "evidence remedies, StartWeightDecay (raise weight-decay to at least 0.0001), applies. The model memorises its "
        "training set: L2 regularisation, trained again from the start. Evidence: no numeric evidence. Next: raising "
        "weight-decay 0 -> 0.0001."
    )
