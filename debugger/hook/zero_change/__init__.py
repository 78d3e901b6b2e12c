"""Zero script change: the job's debugger watches a training script that creates no hook of its own.

SageMaker Debugger's framework containers promised that a training script needs no change to be watched. The job
launcher keeps that promise here: before it runs the entry point it calls :func:`watch_when_imported`, and when the
script imports a framework the debugger knows, that framework's automatic hook is installed:

    torch    :mod:`debugger.hook.zero_change.pytorch`: PyTorch's global module and optimizer hooks; a step is an optimizer
             step, its loss the tensor ``backward()`` was called on
    xgboost  :mod:`debugger.hook.zero_change.xgboost`: the hook added to ``xgboost.train``'s callbacks

A hook the script creates itself (``smd.Hook.create_from_json_file()``, ``smd.get_hook(...)``,
``Hook.from_configs(...)``) always wins: the automatic one stands aside (:func:`debugger.hook.hook_base.
announce_hook_creation`). A script the automatic hook cannot watch faithfully is refused with
:class:`ZeroScriptChangeRefused`, whose message says why and how to watch it from the script; the launcher turns it
into the job's failure text.

Imports neither torch nor xgboost: the launcher imports this module, and the script brings its framework.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The failure text's first word when the zero-change hook refuses a script.
REFUSED_KIND = "ZeroScriptChangeUnsupported"
#: What a refusal tells the user to do instead.
EXPLICIT_HOOK_ADVICE = (
    "watch it from the script instead: import smdebug.pytorch as smd; hook = smd.Hook.create_from_json_file(); "
    "hook.register_module(model); hook.register_loss(loss_fn) (see debugger/README.md)"
)
#: The framework module -> the module whose ``install()`` watches it.
WATCHERS = {"torch": "debugger.hook.zero_change.pytorch", "xgboost": "debugger.hook.zero_change.xgboost"}


class ZeroScriptChangeRefused(BaseException):
    """The automatic hook cannot watch this script faithfully (several optimizers each after its own backward, a
    script that updates its parameters itself, ...). A BaseException, like StopTrainingRequested, so the script's
    own ``except Exception`` does not swallow it."""

    kind = REFUSED_KIND


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Runs a callback right after a top-level module has been imported (its ``__init__`` executed), before the
    importing statement returns. Finds nothing itself: it wraps the loader the other finders return."""

    def __init__(self, callbacks: dict[str, Callable[[object], None]]):
        self._callbacks = dict(callbacks)
        self._lock = threading.Lock()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self._callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                del loader.exec_module  # the loader's own method again
            except AttributeError:
                pass
            self._imported(fullname, module)

        loader.exec_module = exec_module
        return spec

    def _imported(self, name: str, module: object) -> None:
        with self._lock:
            callback = self._callbacks.pop(name, None)
            if not self._callbacks and self in sys.meta_path:
                sys.meta_path.remove(self)
        if callback is not None:
            callback(module)


#: The packages a watcher is made of: a framework imported while one of their modules is still being imported (a
#: script importing ``smdebug.pytorch`` or ``debugger`` before torch) waits for that import to finish.
_OWN_PACKAGES = ("debugger", "smdebug")


def _own_modules_initializing() -> bool:
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in _OWN_PACKAGES and getattr(getattr(module, "__spec__", None), "_initializing", False):
            return True
    return False


class _AfterOwnImports:
    """Runs callbacks at the first import statement after no module of the debugger's own packages is being
    imported: a watcher made of those modules cannot be built while one of them is half-initialized (a circular
    import), and the script's next import (``import torch`` after ``import smdebug.pytorch``) comes before it trains."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []
        self._original: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def defer(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._callbacks.append(callback)
            if self._original is None:
                self._original = builtins.__import__
                builtins.__import__ = self._import

    def _import(self, *arguments: Any, **keywords: Any) -> Any:
        original = self._original
        if original is None:  # restored meanwhile by another thread: the interpreter's own
            original = builtins.__import__ if builtins.__import__ != self._import else importlib.__import__
        module = original(*arguments, **keywords)
        if self._callbacks and not _own_modules_initializing():
            with self._lock:
                callbacks, self._callbacks = self._callbacks, []
                if self._original is not None and builtins.__import__ == self._import:
                    builtins.__import__ = self._original
                self._original = None
            for callback in callbacks:
                callback()
        return module


_AFTER_OWN_IMPORTS = _AfterOwnImports()


def _install(framework: str) -> Callable[[object], None]:
    def install(_module: object) -> None:
        if _own_modules_initializing():
            _AFTER_OWN_IMPORTS.defer(lambda: install(_module))
            return
        try:
            importlib.import_module(WATCHERS[framework]).install()
        except Exception as error:  # noqa: BLE001 - the script must still run; say why it is not watched
            print(
                f"[debugger] the zero-change hook for {framework} could not be installed ({type(error).__name__}: "
                f"{error}); this job is watched only by a hook the script creates itself",
                file=sys.stderr,
                flush=True,
            )

    return install


def watch_when_imported(frameworks: tuple[str, ...] = tuple(WATCHERS)) -> None:
    """Install each framework's automatic hook as soon as the script imports that framework (at once if it is
    imported already)."""
    pending = {}
    for framework in frameworks:
        if framework in sys.modules:
            _install(framework)(sys.modules[framework])
        else:
            pending[framework] = _install(framework)
    if pending:
        sys.meta_path.insert(0, _PostImportFinder(pending))


def remove_hook_output(out_dir: Path, first_step: int = 0, resumed_status: Any = None) -> int:
    """Remove what the zero-change hook wrote into ``out_dir`` (steps, status, collections, metrics) before the
    script's own hook starts there; the number of steps removed. A hook that went on from an interrupted run of the
    job (spot: its steps from ``first_step``, ``resumed_status`` the run's status document) leaves that run's steps
    and puts its status back, so the script's hook resumes from them."""
    from contracts.rule_status import RULE_STATUS_FILE  # lazily: the launcher imports this module, not numpy
    from debugger.storage import layout

    steps = {step: path for step, path in layout.list_step_files(out_dir).items() if step >= first_step}
    for path in steps.values():
        path.unlink(missing_ok=True)
    for name in (RULE_STATUS_FILE, layout.COLLECTIONS_FILE, layout.METRICS_FILE):
        if not (name == RULE_STATUS_FILE and resumed_status is not None):
            (out_dir / name).unlink(missing_ok=True)
    if resumed_status is not None:
        layout.atomic_write_text(out_dir / RULE_STATUS_FILE, resumed_status.to_json())
    return len(steps)


class StandsAside:
    """What both watchers (PyTorch's, XGBoost's) do when the script creates a hook of its own: it wins. The watcher's
    hooks go (``uninstall``), and its automatic hook, if it started, is closed and what it recorded removed."""

    #: what had begun when the script's hook came (training, boosting), and what the automatic hook saved
    BEGAN = "training"
    SAVED = "saved steps"

    def stand_aside(self) -> None:
        if self.stood_aside:
            return
        self.stood_aside = True
        self.uninstall()
        hook, self.hook = self.hook, None
        discard_automatic_run(hook, self.BEGAN, self.SAVED)


def discard_automatic_run(hook: Any, began: str, saved: str) -> None:
    """The script created a hook of its own after ``began`` (training, boosting) began: close the zero-change hook
    (``hook``, None if it never started), remove what it recorded and say so in the job's log."""
    if hook is None:
        return
    hook.close(training_ended=False)
    removed = remove_hook_output(hook.out_dir, getattr(hook, "_first_step", 0), getattr(hook, "_resumed_status", None))
    print(
        f"[debugger] the script created its own hook after {began} began; the zero-change hook's output "
        f"({removed} {saved}) was removed and the script's hook records the run",
        file=sys.stderr,
        flush=True,
    )

