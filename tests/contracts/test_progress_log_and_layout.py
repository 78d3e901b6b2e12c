import math
import re

import pytest

from contracts import bucket_layout
from contracts.progress_log import METRIC_DEFINITIONS, format_epoch_line, format_step_line, parse_progress_line


def test_step_line_round_trip_and_metric_regexes():
    line = format_step_line(step=3, epoch=0, phase="warmup", loss=math.nan, learning_rate=0.1, gradient_norm=math.inf)
    parsed = parse_progress_line(line)
    assert parsed["step"] == 3 and parsed["phase"] == "warmup" and math.isinf(parsed["gradient_norm"])
    found = {d["Name"]: re.search(d["Regex"], line) for d in METRIC_DEFINITIONS}
    assert found["train:gradient_norm"].group(1) == "inf"
    assert found["train:loss"].group(1) == "nan"
    assert found["test:accuracy"] is None


def test_epoch_line_matches_test_metrics():
    line = format_epoch_line(epoch=1, train_loss=0.2, test_loss=0.25, test_accuracy=0.97, seconds=8.0)
    values = {d["Name"]: re.search(d["Regex"], line) for d in METRIC_DEFINITIONS}
    assert float(values["test:accuracy"].group(1)) == pytest.approx(0.97)
    assert parse_progress_line("some other log line") is None


def test_bucket_layout():
    assert bucket_layout.rule_status_key("job-a") == "debug-output/job-a/rule-status.json"
    assert bucket_layout.split_s3_uri(bucket_layout.debug_output_uri("b", "job-a")) == ("b", "debug-output/job-a/")
    with pytest.raises(ValueError, match="not an s3:// URI"):
        bucket_layout.split_s3_uri("/local/path")
