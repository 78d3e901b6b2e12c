"""The state machine definition in the template: inline, every substitution resolved, all four of its Lambdas reached."""

from __future__ import annotations

import json
import re

import pytest

from infra.workflow import DefinitionError, load_definition

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

SUBSTITUTION = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def resolve_like_cloudformation(definition: str, substitutions: dict) -> tuple[str, dict[str, str]]:
    """Apply DefinitionSubstitutions as CloudFormation does; each value stands for the resource it references."""
    markers = {}
    for name, value in substitutions.items():
        if "Fn::GetAtt" in value:
            markers[name] = f"arn:resolved:{value['Fn::GetAtt'][0]}"
        elif "Ref" in value:
            markers[name] = f"arn:resolved:{value['Ref']}"
        else:
            raise AssertionError(f"substitution {name} is neither Ref nor GetAtt: {value}")
    return SUBSTITUTION.sub(lambda m: markers.get(m.group(1), m.group(0)), definition), markers


def test_every_substitution_resolves_and_reaches_the_four_lambdas(synthesized):
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    properties = machine["Properties"]
    resolved, markers = resolve_like_cloudformation(
        properties["DefinitionString"], properties["DefinitionSubstitutions"]
    )
    assert "${" not in resolved
    functions = synthesized.stack.functions
    expected = {
        "TrainFunctionArn": functions.train,
        "MonitorFunctionArn": functions.monitor,
        "PlanFunctionArn": functions.plan,
        "JobEventsFunctionArn": functions.job_events,
    }
    for name, function in expected.items():
        assert properties["DefinitionSubstitutions"][name] == {"Fn::GetAtt": [synthesized.logical_id(function), "Arn"]}
    definition = json.loads(resolved)
    reached = set()

    def walk(states):
        for state in states.values():
            if state.get("Type") == "Task":
                reached.add(state["Resource"])
                function_name = (state.get("Parameters") or {}).get("FunctionName")
                if function_name:
                    reached.add(function_name)
            for branch in state.get("Branches", []):
                walk(branch["States"])

    walk(definition["States"])
    for name in expected:
        assert markers[name] in reached, f"no Task reaches {name}"


def _write(tmp_path, definition) -> object:
    path = tmp_path / "machine.asl.json"
    path.write_text(definition if isinstance(definition, str) else json.dumps(definition))
    return path


def _loop_tasks(**overrides):
    states = {
        "Train": {"Type": "Task", "Resource": "${TrainFunctionArn}", "Next": "Wait"},
        "Wait": {"Type": "Task", "Resource": "${JobEventsFunctionArn}", "Next": "Monitor"},
        "Monitor": {"Type": "Task", "Resource": "${MonitorFunctionArn}", "Next": "Plan"},
        "Plan": {"Type": "Task", "Resource": "${PlanFunctionArn}", "End": True},
    }
    states.update(overrides)
    return {"StartAt": "Train", "States": states}


def test_a_definition_with_the_four_substitutions_loads(tmp_path):
    _, used = load_definition(_write(tmp_path, _loop_tasks()))
    assert used == {"TrainFunctionArn", "MonitorFunctionArn", "PlanFunctionArn", "JobEventsFunctionArn"}


@pytest.mark.parametrize(
    ("definition", "named"),
    [
        ("{not json", "not valid JSON"),
        ({"Comment": "no states"}, "needs StartAt and States"),
        (
            _loop_tasks(
                Plan={"Type": "Task", "Resource": "${PlanFunctionArn}", "Next": "Extra"},
                Extra={"Type": "Task", "Resource": "${RogueArn}", "End": True},
            ),
            "${RogueArn}",
        ),
        (_loop_tasks(Plan={"Type": "Pass", "End": True}), "${PlanFunctionArn}"),
        (
            _loop_tasks(
                Plan={"Type": "Task", "Resource": "${PlanFunctionArn}", "Next": "Stop"},
                Stop={"Type": "Task", "Resource": "arn:aws:states:::sagemaker:stopTrainingJob", "End": True},
            ),
            "sagemaker:stopTrainingJob",
        ),
    ],
)
def test_a_definition_the_stack_cannot_deploy_fails_the_synth_naming_the_problem(tmp_path, definition, named):
    with pytest.raises(DefinitionError) as raised:
        load_definition(_write(tmp_path, definition))
    assert named in str(raised.value) and "machine.asl.json" in str(raised.value)


def test_a_missing_definition_file_names_the_path_and_the_context_value(tmp_path):
    with pytest.raises(DefinitionError, match="state_machine_definition"):
        load_definition(tmp_path / "absent.asl.json")
