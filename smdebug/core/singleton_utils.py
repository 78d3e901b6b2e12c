"""smdebug's hook singleton (the last hook created, or one made from the configuration file on request), one per
framework package: ``smdebug.pytorch`` and ``smdebug.xgboost`` each keep their own."""

from __future__ import annotations

import importlib


class HookSingleton:
    """The hook slot of one framework; ``hook_module`` names the module whose ``Hook`` builds one on request (imported
    only then, so ``smdebug.xgboost`` never loads torch)."""

    def __init__(self, hook_module: str):
        self._hook_module = hook_module
        self._hook = None

    def set_hook(self, custom_hook) -> None:
        self._hook = custom_hook

    def del_hook(self) -> None:
        self._hook = None

    def get_hook(self, json_config_path=None, create_if_not_exists: bool = False):
        """The hook created last; else, with ``create_if_not_exists``, one from the configuration file SageMaker
        writes (None when there is no such file, as outside SageMaker)."""
        if self._hook is None and create_if_not_exists:
            hook_class = importlib.import_module(self._hook_module).Hook
            try:
                hook_class.create_from_json_file(json_config_path)  # the new hook sets itself here
            except FileNotFoundError:
                return None
        return self._hook
