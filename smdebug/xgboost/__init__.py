"""``from smdebug.xgboost import Hook``: smdebug's XGBoost hook (a training callback) over this project's
debugger (:mod:`debugger.hook.xgboost.hook`), and what scripts use beside it. Imports no torch."""

from debugger.core.collection import Collection
from debugger.core.modes import ModeKeys as modes
from debugger.core.save_config import SaveConfig, SaveConfigMode
from smdebug.core.collection import CollectionKeys
from smdebug.trials import create_trial
from smdebug.xgboost.hook import Hook
from smdebug.xgboost.singleton import del_hook, get_hook, set_hook

__all__ = [
    "Collection",
    "CollectionKeys",
    "Hook",
    "SaveConfig",
    "SaveConfigMode",
    "create_trial",
    "del_hook",
    "get_hook",
    "modes",
    "set_hook",
]
