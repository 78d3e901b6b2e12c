"""A local run_spec's spot_interruptions: checked strictly, and carried to the local platform as a SageMaker tag."""

from __future__ import annotations

import botocore.session
import pytest
import regex

from contracts import ContractError
from contracts.spot_interruptions import (
    LOCAL_SPOT_INTERRUPTIONS_TAG,
    SpotInterruption,
    check_spot_interruptions,
    from_tag_value,
    to_tag_value,
)

TAG_SHAPE = botocore.session.get_session().get_service_model("sagemaker").shape_for("Tag")


def test_entries_round_trip_through_a_tag_sagemakers_model_accepts():
    entries = check_spot_interruptions([{"at_step": 30}, {"after_seconds": 90}, {"at_step": 70}, {"after_seconds": 1.5}])
    value = to_tag_value(entries)
    assert value == "at_step=30 after_seconds=90 at_step=70 after_seconds=1.5"
    for member, text in (("Key", LOCAL_SPOT_INTERRUPTIONS_TAG), ("Value", value)):
        metadata = TAG_SHAPE.members[member].metadata  # the real API's pattern (\p{L}...: the regex package reads it)
        assert regex.fullmatch(metadata["pattern"], text) and len(text) <= metadata["max"]
    assert from_tag_value(value) == [
        SpotInterruption("at_step", 30), SpotInterruption("after_seconds", 90),
        SpotInterruption("at_step", 70), SpotInterruption("after_seconds", 1.5),
    ]  # fmt: skip
    longest = to_tag_value([{"after_seconds": 86_399.5}] * 10)
    assert len(longest) <= 256


@pytest.mark.parametrize(
    ("value", "field", "problem"),
    [
        ({"at_step": 3}, "spot_interruptions", "must be a JSON list"),
        ([{"at_step": 3}] * 11, "spot_interruptions", "at most 10 interruptions"),
        ([{"at_step": 3, "after_seconds": 2}], "spot_interruptions[0]", 'must be {"at_step": N} or {"after_seconds": S}'),
        ([{"at_steps": 3}], "spot_interruptions[0]", 'must be {"at_step": N}'),
        ([{"at_step": "3"}], "spot_interruptions[0].at_step", "must be a number"),
        ([{"at_step": True}], "spot_interruptions[0].at_step", "must be a number"),
        ([{"at_step": 0}], "spot_interruptions[0].at_step", "whole step number 1-10000000"),
        ([{"at_step": 2.5}], "spot_interruptions[0].at_step", "whole step number"),
        ([{"at_step": 9}, {"at_step": 9}], "spot_interruptions[1].at_step", "after the previous at_step 9"),
        ([{"after_seconds": 0}], "spot_interruptions[0].after_seconds", "more than 0"),
        ([{"after_seconds": float("inf")}], "spot_interruptions[0].after_seconds", "at most 86400"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(value, field, problem):
    with pytest.raises(ContractError) as refused:
        check_spot_interruptions(value)
    assert refused.value.field == field and problem in refused.value.problem


def test_a_malformed_tag_names_the_tag():
    for text in ("at_step=-1", "at_step=3,after_seconds=2", "step=3", "at_step=0"):
        with pytest.raises(ContractError) as refused:
            from_tag_value(text)
        assert refused.value.field == f"Tags.{LOCAL_SPOT_INTERRUPTIONS_TAG}"
