"""smdebug's XGBoost hook singleton: the last hook created, or one made from the configuration file on request."""

from smdebug.core.singleton_utils import HookSingleton

_SINGLETON = HookSingleton("smdebug.xgboost.hook")
set_hook = _SINGLETON.set_hook
del_hook = _SINGLETON.del_hook
get_hook = _SINGLETON.get_hook
