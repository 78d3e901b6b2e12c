import json

from remediate.execution_history import current_state_name, latest_state_payload

STATE = {"state": {"next_action": "monitor", "attempts": []}}
NEWER = {"state": {"next_action": "end", "attempts": []}}


def test_the_execution_output_wins():
    history = [{"id": 1, "stateExitedEventDetails": {"output": json.dumps(NEWER)}}]
    assert latest_state_payload({"output": json.dumps(STATE)}, history) == STATE


def test_a_running_execution_reads_the_newest_output_in_its_history():
    history = [
        {"id": 1, "stateExitedEventDetails": {"output": json.dumps(STATE)}},
        {"id": 2, "taskSucceededEventDetails": {"output": json.dumps({"Payload": NEWER, "StatusCode": 200})}},
        {"id": 3, "stateExitedEventDetails": {"output": "not json"}},
    ]
    assert latest_state_payload({}, history) == NEWER
    assert latest_state_payload({}, [{"id": 1, "stateExitedEventDetails": {"output": '{"other": 1}'}}]) is None


def test_current_state_is_the_last_entered():
    history = [
        {"stateEnteredEventDetails": {"name": "Train"}},
        {"stateExitedEventDetails": {"name": "Train"}},
        {"stateEnteredEventDetails": {"name": "WaitForJob"}},
    ]
    assert current_state_name(history) == "WaitForJob"
    assert current_state_name([]) == ""
