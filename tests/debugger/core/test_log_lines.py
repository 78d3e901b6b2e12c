"""The debugger's own lines in a job's log say they are the debugger's (debugger.core.log_lines)."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_in_a_job_the_debuggers_log_records_carry_its_prefix_once_and_tensorboardx_nan_warnings_are_dropped():
    # a process of its own: the handler is the job process's, not this test session's
    code = textwrap.dedent(
        """
        import logging
        logging.basicConfig(format="root: %(message)s")  # a script's own logging configuration
        from debugger.core.log_lines import prefix_debugger_logging
        prefix_debugger_logging()
        prefix_debugger_logging()
        logging.getLogger("debugger.hook").warning("rule %s raised at step %d: boom", "Custom", 3)
        logging.getLogger("tensorboardX.x2num").warning("NaN or Inf found in input tensor.")
        logging.getLogger("tensorboardX.x2num").warning("another warning")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stderr.splitlines() == ["[debugger] rule Custom raised at step 3: boom", "root: another warning"]


def test_outside_a_job_the_debuggers_loggers_are_left_as_they_are():
    assert logging.getLogger("debugger").propagate
