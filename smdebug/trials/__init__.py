"""``from smdebug.trials import create_trial``: a local directory or ``s3://bucket/prefix``."""

from debugger.trial.trial import BaseTrial as Trial
from debugger.trial.trial import Trial as LocalTrial
from debugger.trial.trial import Trial as S3Trial
from debugger.trial.trial import create_trial

__all__ = ["LocalTrial", "S3Trial", "Trial", "create_trial"]
