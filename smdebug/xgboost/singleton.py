"""smdebug's XGBoost hook singleton: the last hook created, or one made from the configuration file on request."""

from __future__ import annotations

_hook = None


def set_hook(custom_hook) -> None:
    global _hook
    _hook = custom_hook


def del_hook() -> None:
    global _hook
    _hook = None


def get_hook(json_config_path=None, create_if_not_exists: bool = False):
    """The hook created last; else, with ``create_if_not_exists``, one from the configuration file SageMaker
    writes (None when there is no such file, as outside SageMaker)."""
    if _hook is None and create_if_not_exists:
        from smdebug.xgboost.hook import Hook

        try:
            Hook.create_from_json_file(json_config_path)
        except FileNotFoundError:
            return None
    return _hook
