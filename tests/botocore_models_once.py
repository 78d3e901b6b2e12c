"""botocore's service models, read once per test process instead of once per session.

botocore caches what its loader reads (service models, endpoint rules, partitions: JSON files of up to a few MB)
per loader, and every botocore session has its own loader. moto starts every mock with a fresh default session,
its backends and X-Ray make their own, so each workflow test read and decoded the same files again: decoding JSON
was a quarter of the workflow tests' CPU time (py-spy). Here every loader with the same search paths shares one
cache: what a second session gets is what botocore hands a session that asks twice (the same objects, read-only by
botocore's own contract), so no request or response changes.

The patch points are botocore's Loader methods that its own per-loader cache wraps; they are checked, so a botocore
upgrade that moves them fails here instead of silently reading everything again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

#: Loader methods whose results depend only on the loader's search paths and arguments.
SHARED_METHODS = ("load_service_model", "load_data_with_path", "list_available_services", "list_api_versions")


@contextlib.contextmanager
def models_read_once() -> Iterator[None]:
    from botocore import loaders

    originals = {}
    for name in SHARED_METHODS:
        if not callable(getattr(loaders.Loader, name, None)):
            raise AssertionError(f"botocore moved Loader.{name}: update tests/botocore_models_once.py")
        originals[name] = getattr(loaders.Loader, name)
    shared: dict[tuple[Any, ...], Any] = {}
    lock = threading.Lock()

    def sharing(name: str):
        original = originals[name]

        def method(self, *args: Any, **kwargs: Any) -> Any:
            key = (name, tuple(self.search_paths), tuple(self.extras_types), args, tuple(sorted(kwargs.items())))
            with lock:
                if key in shared:
                    return shared[key]
            value = original(self, *args, **kwargs)
            with lock:
                return shared.setdefault(key, value)

        method.__name__ = name
        return method

    for name in SHARED_METHODS:
        setattr(loaders.Loader, name, sharing(name))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(loaders.Loader, name, original)
