"""Zero script change for XGBoost: the job's hook added to the callbacks of the script's ``xgboost.train`` call.

Installed by the job launcher when the script imports xgboost (:mod:`debugger.hook.zero_change`). ``xgboost.train`` (also
where ``xgboost.training`` and the scikit-learn estimators' ``fit`` call it) is wrapped: the first call gets the job's
:class:`debugger.hook.xgboost.hook.XGBoostHook` appended to its ``callbacks``, built from the job's configuration files
with the call's ``params`` as its hyperparameters, ``dtrain`` as its training data (for the SHAP values; not a
QuantileDMatrix, which cannot be sliced) and the last of ``evals`` that is not ``dtrain`` as its validation data (the one XGBoost's early stopping reads). Every rule then runs after every
boosting round, with StopTraining, as with ``callbacks=[Hook.create_from_json_file()]``.

A call whose callbacks already hold a debugger hook, or a script that creates one (``Hook.create_from_json_file()``),
is left alone: the script's hook wins. Later ``xgboost.train`` calls (a refit, a second model) are not watched, and
the job's log says so: their rounds would restart the first call's step numbers.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import xgboost

from debugger.hook.hook_base import HookBase, add_creation_listener, remove_creation_listener
from debugger.hook.xgboost.hook import XGBoostHook
from debugger.hook.zero_change import StandsAside

#: Where ``xgboost.train`` is looked up by the callers a script uses: the package, its module, the sklearn estimators.
TRAIN_LOCATIONS = ("xgboost", "xgboost.training", "xgboost.sklearn")


def _validation_data(evals: Any, dtrain: Any) -> Any:
    for data, _name in reversed(list(evals or ())):
        if data is not dtrain:
            return data
    return None


class XGBoostWatcher(StandsAside):
    """The wrapped ``train`` functions; ``hook_factory(params, dtrain, dvalidation)`` builds the job's hook (default:
    from the job's configuration files)."""

    BEGAN = "boosting"
    SAVED = "saved rounds"

    def __init__(self, hook_factory: Callable[..., XGBoostHook] | None = None):
        self._factory = hook_factory or self._hook_from_job_config
        self.hook: XGBoostHook | None = None
        self.stood_aside = False
        self._installed = False
        self._starting = False
        self._restore: list[tuple[Any, str, Any]] = []

    @staticmethod
    def _hook_from_job_config(params: dict, dtrain: Any, dvalidation: Any) -> XGBoostHook:
        return XGBoostHook.create_from_json_file(hyperparameters=params, train_data=dtrain, validation_data=dvalidation)

    def install(self) -> None:
        if self._installed or self.stood_aside:
            return
        self._installed = True
        original = xgboost.train
        wrapper = functools.wraps(original)(self._train_wrapper(original))
        for name in TRAIN_LOCATIONS:
            module = sys.modules.get(name)
            if module is not None and getattr(module, "train", None) is original:
                self._restore.append((module, "train", original))
                module.train = wrapper
        add_creation_listener(self._on_hook_creation)

    def uninstall(self) -> None:
        if not self._installed:
            return
        self._installed = False
        for module, name, original in self._restore:
            setattr(module, name, original)
        self._restore = []
        remove_creation_listener(self._on_hook_creation)

    def _train_wrapper(self, original: Callable) -> Callable:
        signature = inspect.signature(original)

        def train(*args: Any, **kwargs: Any) -> Any:
            if self.stood_aside:
                return original(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            callbacks = list(bound.arguments.get("callbacks") or ())
            if any(isinstance(callback, XGBoostHook) for callback in callbacks):
                self.stand_aside()  # the script passes its own hook
                return original(*args, **kwargs)
            if self.hook is not None:
                print(
                    "[debugger] zero script change watches the script's first xgboost.train call only; this one is "
                    "not watched",
                    file=sys.stderr,
                    flush=True,
                )
                return original(*args, **kwargs)
            params = bound.arguments.get("params")
            params = dict(params) if params is not None else {}
            dtrain = bound.arguments.get("dtrain")
            # the SHAP sample is a slice of the training data, which a QuantileDMatrix (the scikit-learn estimators'
            # with the hist method) cannot give: no SHAP tensors then
            shap_data = None if isinstance(dtrain, xgboost.QuantileDMatrix) else dtrain
            self._starting = True
            try:
                self.hook = self._factory(params, shap_data, _validation_data(bound.arguments.get("evals"), dtrain))
            finally:
                self._starting = False
            print(
                "[debugger] zero script change: the script creates no hook, so the job's debugger watches its "
                "xgboost.train call (the hook added to its callbacks)",
                file=sys.stderr,
                flush=True,
            )
            bound.arguments["callbacks"] = [*callbacks, self.hook]
            return original(*bound.args, **bound.kwargs)

        return train

    def _on_hook_creation(self, hook: HookBase | None) -> None:
        if self._starting or (hook is not None and not isinstance(hook, XGBoostHook)):
            return  # our own hook, or another framework's
        self.stand_aside()


_WATCHER: XGBoostWatcher | None = None


def install() -> XGBoostWatcher:
    """The job's zero-change watcher for XGBoost (one per process), installed."""
    global _WATCHER
    if _WATCHER is None:
        _WATCHER = XGBoostWatcher()
        _WATCHER.install()
    return _WATCHER


def current() -> XGBoostWatcher | None:
    return _WATCHER
