"""Reading a run's debug output, finished or still running: smdebug's documented trial API.

    from debugger.trial import create_trial
    trial = create_trial("/opt/ml/output/tensors")      # or "s3://bucket/prefix"

    trial.py            BaseTrial, Trial (step files on disk or S3), create_trial
    tensor.py           one tensor's steps, values and reductions
    live_trial.py       LiveTrial: the in-job view the rules read (recent steps in memory)
    trial_sources.py    where the files are read from: a local directory or S3

A trial reads what debugger.storage wrote, in the vocabulary of debugger.core; the rules (debugger.rules) read
trials.
"""

from __future__ import annotations

from debugger.trial.live_trial import LiveTrial
from debugger.trial.trial import BaseTrial, Trial, create_trial

__all__ = ["BaseTrial", "LiveTrial", "Trial", "create_trial"]
