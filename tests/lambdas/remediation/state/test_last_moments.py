"""The execution-cleanup reads an ended execution's history newest first and stops at what it needs (finding 1 of
issue 23): a 48-hour execution at the 1 s poll holds about 22,000 events, many carrying a 100 KB state, which the
cleanup used to read whole, oldest first, inside a 512 MB, 120 s Lambda."""

from __future__ import annotations

import json

from lambdas.remediation.state import execution_history

STATE = {"state": {"next_action": "monitor", "history": {"latest_job_name": "remediation-job-0123456789-001"}}}
PADDING = "x" * 100_000


class PagedHistory:
    """GetExecutionHistory as AWS answers it (reverseOrder, maxResults, nextToken) over a long history: every
    monitor pass's events, each state output carrying about 100 KB, built only when a page asks for them."""

    def __init__(self, events: int):
        self.total = events
        self.pages = 0
        self.events_sent = 0

    def event(self, event_id: int) -> dict:
        kind = event_id % 5
        if event_id == 1:
            return {"id": 1, "type": "ExecutionStarted"}
        if kind == 0:
            return {"id": event_id, "type": "TaskStateEntered", "stateEnteredEventDetails": {"name": "Monitor"}}
        if kind == 1:
            parameters = {"Payload": {"execution_start_time": "2026-11-20T08:00:00.000Z", "pad": PADDING}}
            return {"id": event_id, "type": "TaskScheduled", "taskScheduledEventDetails": {"parameters": json.dumps(parameters)}}
        if kind == 2:
            return {"id": event_id, "type": "TaskStateExited", "stateExitedEventDetails": {"output": json.dumps({**STATE, "pad": PADDING})}}
        return {"id": event_id, "type": "TaskStarted"}

    def get_execution_history(self, executionArn, maxResults=100, reverseOrder=False, nextToken=None):
        self.pages += 1
        start = int(nextToken or 0)
        ids = list(range(self.total, 0, -1)) if reverseOrder else list(range(1, self.total + 1))
        chosen = ids[start : start + maxResults]
        self.events_sent += len(chosen)
        page = {"events": [self.event(i) for i in chosen]}
        if start + maxResults < self.total:
            page["nextToken"] = str(start + maxResults)
        return page


def test_the_last_moments_of_a_22000_event_history_take_one_page():
    history = PagedHistory(22_000)
    moments = execution_history.read_last_moments(history, "arn:aws:states:us-east-1:1:execution:m:e")
    assert moments.state_payload["state"] == STATE["state"]
    assert moments.start_time == "2026-11-20T08:00:00.000Z" and moments.current_state == "Monitor"
    assert history.pages == 1 and history.events_sent == execution_history.NEWEST_FIRST_PAGE
    assert moments.events_read <= 5


class Silent(PagedHistory):
    """The same history without its payloads (what the old reader would have had to hold: 22,000 events, about
    8,800 of them with 100 KB each)."""

    def event(self, event_id: int) -> dict:
        return {"id": event_id, "type": "TaskStarted"}


def test_reading_the_whole_history_oldest_first_is_what_it_replaced():
    history = Silent(22_000)
    events = execution_history.read_history(history, "arn:aws:states:us-east-1:1:execution:m:e")
    assert len(events) == 22_000 and history.pages == 22


def test_it_reads_no_further_than_its_limit():
    history = Silent(22_000)
    moments = execution_history.read_last_moments(history, "arn", limit=100)
    assert moments.state_payload is None and moments.events_read == 100 and history.pages == 4
