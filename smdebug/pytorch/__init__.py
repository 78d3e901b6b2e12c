"""``import smdebug.pytorch as smd``: the PyTorch hook and what scripts use beside it."""

from debugger.core.collection import Collection
from debugger.core.modes import ModeKeys as modes
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.collection import CollectionKeys
from smdebug.pytorch.hook import Hook
from smdebug.pytorch.singleton import del_hook, get_hook, set_hook
from smdebug.trials import create_trial

__all__ = [
    "Collection",
    "CollectionKeys",
    "Hook",
    "ReductionConfig",
    "SaveConfig",
    "SaveConfigMode",
    "create_trial",
    "del_hook",
    "get_hook",
    "modes",
    "set_hook",
]
