"""Collections: named groups of tensors, each with its own save and reduction configuration (smdebug's model).

A tensor belongs to a collection when its name is in the collection's ``tensor_names`` or matches one of its
``include_regex`` patterns (``re.search``: anywhere in the name). ``include`` adds patterns. The built-in
collections of a PyTorch hook and their patterns:

    weights    ^(?!gradient).*weight     biases  ^(?!gradient).*bias     gradients  ^gradient
    losses     [Ll]oss_(?!input).*output  default (the hook's include_regex)  all  .* (with save_all)

Our own hook (``debugger.Hook.from_configs``) adds ``metrics`` (record_metric), ``learning_rate`` and
``activations`` (inputs and outputs of activation modules).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from contracts import ContractError
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig

DEFAULT = "default"
ALL = "all"
WEIGHTS = "weights"
BIASES = "biases"
GRADIENTS = "gradients"
LOSSES = "losses"
METRICS = "metrics"
SM_METRICS = "sm_metrics"
LEARNING_RATE = "learning_rate"
ACTIVATIONS = "activations"

#: smdebug's built-in collections of a PyTorch hook, with the patterns that define them.
PYTORCH_COLLECTION_PATTERNS = {
    ALL: [],
    DEFAULT: [],
    WEIGHTS: ["^(?!gradient).*weight"],
    BIASES: ["^(?!gradient).*bias"],
    GRADIENTS: ["^gradient"],
    LOSSES: ["[Ll]oss_(?!input).*output"],
}
#: Collections of scalars: always saved as the value itself, never reduced.
SCALAR_COLLECTIONS = frozenset({LOSSES, METRICS, SM_METRICS, LEARNING_RATE})


def _regex_list(value: Any, field: str) -> list[str]:
    patterns = [value] if isinstance(value, str) else list(value) if isinstance(value, Iterable) else None
    if patterns is None:
        raise ContractError(field, f"must be a regular expression or a list of them; got {value!r}")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as error:
            raise ContractError(field, f"{pattern!r} is not a valid regular expression: {error}") from None
    return patterns


class Collection:
    """A group of tensors (smdebug's Collection): ``include_regex``, ``tensor_names``, ``save_config``,
    ``reduction_config``, ``save_histogram``; ``include(regex)``; ``add_module_tensors(module, ...)``."""

    def __init__(self, name, include_regex=None, tensor_names=None, reduction_config=None, save_config=None, save_histogram=True):
        self.name = name
        self._include_regex: list[str] = []
        self._compiled: list[re.Pattern[str]] = []
        self.tensor_names = set(tensor_names or ())
        self.reduction_config = reduction_config
        self.save_config = save_config
        self.save_histogram = save_histogram
        self.modules: dict[Any, tuple[bool, bool]] = {}
        self.version = 0  # bumped on every change, so the hook's membership cache knows
        if include_regex:
            self.include(include_regex)

    def include(self, regex) -> None:
        """Add a pattern (or a list of them): tensors whose names match it join the collection."""
        for pattern in _regex_list(regex, f"collection {self.name}: include_regex"):
            if pattern not in self._include_regex:
                self._include_regex.append(pattern)
                self._compiled.append(re.compile(pattern))
        self.version += 1

    @property
    def include_regex(self) -> list[str]:
        return list(self._include_regex)

    @include_regex.setter
    def include_regex(self, value) -> None:
        self._include_regex, self._compiled = [], []
        self.include(value or [])

    @property
    def save_config(self) -> SaveConfig | None:
        return self._save_config

    @save_config.setter
    def save_config(self, value) -> None:
        self._save_config = None if value is None else SaveConfig.parse(value)
        self.version = getattr(self, "version", 0) + 1

    @property
    def reduction_config(self) -> ReductionConfig | None:
        return self._reduction_config

    @reduction_config.setter
    def reduction_config(self, value) -> None:
        if value is not None and not isinstance(value, ReductionConfig):
            raise ContractError(f"collection {self.name}: reduction_config", f"must be a ReductionConfig; got {value!r}")
        self._reduction_config = value

    def add_tensor_name(self, name: str) -> None:
        if name not in self.tensor_names:
            self.tensor_names.add(name)
            self.version += 1

    def add_module_tensors(self, module, inputs: bool = False, outputs: bool = True) -> None:
        """Save ``module``'s inputs and/or outputs as part of this collection (named ``<module>_input_<i>``...)."""
        self.modules[module] = (inputs, outputs)
        self.version += 1

    def matches(self, tensor_name: str) -> bool:
        return tensor_name in self.tensor_names or any(pattern.search(tensor_name) for pattern in self._compiled)

    @property
    def is_configured(self) -> bool:
        return bool(self._include_regex or self.tensor_names or self.modules)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "include_regex": self.include_regex,
            "tensor_names": sorted(self.tensor_names),
            "save_config": self.save_config.to_json_dict() if self.save_config else None,
            "reduction_config": self.reduction_config.to_json_dict() if self.reduction_config else None,
            "save_histogram": self.save_histogram,
        }

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> Collection:
        collection = cls(data["name"], include_regex=data.get("include_regex"), tensor_names=data.get("tensor_names"))
        if data.get("save_config"):
            collection.save_config = {mode: value for mode, value in data["save_config"].items() if value}
        if data.get("reduction_config"):
            collection.reduction_config = ReductionConfig(**data["reduction_config"])
        collection.save_histogram = bool(data.get("save_histogram", True))
        return collection

    def __repr__(self) -> str:
        return f"<Collection {self.name}: include_regex={self.include_regex} tensor_names={sorted(self.tensor_names)[:5]}>"


class CollectionManager:
    """The hook's collections by name; ``get(name)`` creates an empty one on first use, as smdebug's does."""

    def __init__(self, builtin: dict[str, list[str]]):
        self.collections: dict[str, Collection] = {}
        self.builtin = tuple(builtin)
        for name, patterns in builtin.items():
            self.collections[name] = Collection(name, include_regex=patterns)

    def get(self, name: str, create: bool = True) -> Collection:
        if name not in self.collections:
            if not create:
                raise KeyError(f"no collection named {name!r}; collections: {', '.join(self.collections)}")
            self.collections[name] = Collection(name)
        return self.collections[name]

    def add(self, collection: Collection) -> None:
        if not isinstance(collection, Collection):
            raise ContractError("add_collection", f"takes a Collection; got {type(collection).__name__}")
        self.collections[collection.name] = collection

    def version(self) -> tuple:
        return tuple((name, collection.version) for name, collection in self.collections.items())
