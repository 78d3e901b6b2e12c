"""How every message names a step (contracts/step_names.py): the one test with the exact wording."""

from __future__ import annotations

import re

import pytest

from contracts.step_names import STEP_NAME, read_step_name, step_name, step_span


def test_the_wording_of_a_step_an_evaluation_pass_and_the_saved_global_step():
    assert step_name(9, 7) == "step 7"
    assert step_name(9, 7, with_global=True) == "step 7 (saved as global step 9)"
    assert step_name(7, 7, with_global=True) == "step 7"  # the same number is said once
    assert step_name(8, 7, evaluation=True) == "the evaluation pass after step 6"
    assert step_name(8, 7, evaluation=True, with_global=True) == "the evaluation pass after step 6 (saved as global step 8)"
    assert step_name(0, 0, evaluation=True) == "the evaluation pass before step 0"
    assert step_name(12) == "step 12"  # no optimizer step known (an older document, an XGBoost job): as before


@pytest.mark.parametrize(
    ("global_step", "optimizer_step", "evaluation"),
    [(9, 7, False), (8, 7, True), (3, 0, True), (12, None, False)],
)
def test_a_named_step_reads_back_to_its_steps(global_step, optimizer_step, evaluation):
    text = f"found an issue at {step_name(global_step, optimizer_step, evaluation, with_global=True)}: ..."
    read = read_step_name(re.search(STEP_NAME, text))
    # a step whose numbers agree is said once: read back as the global step, its optimizer step not told apart
    expected = optimizer_step if (evaluation or optimizer_step != global_step) else None
    assert read == (global_step, expected, evaluation)


def test_the_wording_of_a_span_of_steps():
    assert step_span(0, 7, 0, 1) == "steps 0-1"
    assert step_span(0, 7, 0, 1, with_global=True) == "steps 0-1 (saved as global steps 0-7)"
    assert step_span(4, 7, 1, 1, with_global=True) == "step 1 (saved as global steps 4-7)"
    assert step_span(3, 3, 1, 1, with_global=True) == "step 1 (saved as global step 3)"
    assert step_span(2, 5, 2, 5, with_global=True) == "steps 2-5"  # the same numbers are said once
    assert step_span(2, 5) == "steps 2-5"  # no optimizer steps known (an older document): as before
    assert step_span(2, 5, 0, None, with_global=True) == "steps 2-5"  # one end unknown: the global span, not a mix
    assert step_span(6, 6) == "step 6"
