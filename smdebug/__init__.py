"""An smdebug-compatible surface over this project's debugger (``debugger/``), not AWS's smdebug library.

A PyTorch training or analysis script written for SageMaker Debugger's ``smdebug`` runs unchanged on it:
``import smdebug.pytorch as smd``, ``from smdebug.trials import create_trial``, ``from smdebug.rules.rule
import Rule``, ``from smdebug.exceptions import ...``. See debugger/README.md, "Scripts written for smdebug",
for what is supported and what differs.

To tell this package from AWS's when both could be imported: ``smdebug.REMEDIATION_DEBUGGER`` is True here
and absent there; ``smdebug.__file__`` shows which one was found first on sys.path.
"""

from debugger.core.collection import Collection
from debugger.core.modes import ModeKeys as modes
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.collection import CollectionKeys

#: Marks this implementation (AWS's smdebug has no such attribute).
REMEDIATION_DEBUGGER = True
#: The smdebug API level this surface follows (AWS smdebug 1.0.34, its last release), and that it is ours.
__version__ = "1.0.34+remediation.debugger"

__all__ = ["Collection", "CollectionKeys", "ReductionConfig", "SaveConfig", "SaveConfigMode", "modes"]
