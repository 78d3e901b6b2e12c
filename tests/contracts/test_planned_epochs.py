"""The epochs a job plans, read from wherever the run_spec states them (contracts.planned_epochs)."""

from __future__ import annotations

import pytest

from contracts.planned_epochs import epochs_hyperparameter, planned_epochs


def test_the_name_mapped_to_num_epochs_wins():
    hyperparameters = {"epochs": 30, "passes": 12}
    assert planned_epochs(hyperparameters, mapped="passes") == 12
    assert epochs_hyperparameter(hyperparameters, mapped="missing") is None  # mapped to nothing the run has


@pytest.mark.parametrize("name", ["num_epochs", "epochs", "n-epochs", "n_epochs", "max_epochs", "num_train_epochs",
                                  "Epochs", "total-epochs"])
def test_a_name_that_spells_an_epoch_count_is_read_without_a_map(name):
    assert planned_epochs({"lr": 0.1, name: 12}) == 12


def test_a_declared_remedy_that_sets_the_best_epoch_names_the_epochs():
    remedies = {"objective_missed": [{"hyperparameter": "rounds", "to_best_epoch": True}]}
    assert planned_epochs({"rounds": 20, "epochs": 3}, remedies=remedies) == 20
    also = {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "also": [{"hyperparameter": "rounds", "to_best_epoch": True}]}]}
    assert planned_epochs({"rounds": 20, "lr": 0.1}, remedies=also) == 20


def test_num_epochs_wins_over_other_spellings_and_two_others_are_ambiguous():
    assert planned_epochs({"num_epochs": 8, "epochs": 3}) == 8
    assert planned_epochs({"epochs": 8, "max_epochs": 30}) is None


def test_what_is_not_an_epoch_count():
    assert planned_epochs({"warmup_epochs": 2, "epochs_per_eval": 1}) is None  # a phase's epochs, not the job's
    assert planned_epochs({"epochs": "12"}) == 12  # digits as script mode passes them
    for value in (0, -3, 2.5, True, "twelve", None):
        assert planned_epochs({"epochs": value}) is None
    assert planned_epochs({}) is None
