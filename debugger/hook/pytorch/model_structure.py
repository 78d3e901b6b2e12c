"""Which of a model's parameters cannot carry a training signal, read from the model the hook watches.

Two kinds, both decided from the model itself, never from the values a rule judges:

* frozen: ``requires_grad`` is False. The parameter gets no gradient and never changes, by the user's choice.
* a bias a normalization removes: the bias of a Linear or convolution whose output goes straight into a
  normalization layer that subtracts, per channel, a mean over every axis the bias is constant on (BatchNorm with
  batch statistics, InstanceNorm, GroupNorm with one channel per group, a LayerNorm over axes that leave out the
  channel). The normalization's output does not depend on that bias, so its gradient is zero by construction
  (1e-12 to 1e-8 in float32: rounding) and it never moves but for weight decay. LayerNorm over the features, or
  GroupNorm with several channels per group, removes only the bias's mean over the group: the rest of the bias
  still reaches the output and carries a signal, so those are not listed.

"Straight into" is read from one training forward pass: :class:`StructureTrace` notes each output of a layer with
a bias and each input of a normalization layer, and pairs them when they are the same tensor object (what
``bn(conv(x))`` or an ``nn.Sequential`` does). Anything in between (an activation, a residual add, a reshape)
breaks the pairing, so the bias is judged like any other tensor.

The model's dropout modules are read too (:func:`active_dropout`): a dropout active while the model trains lowers how
often its top class matches the training labels, which the planner otherwise reads as wrong labels
(contracts.training_labels).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

FROZEN = "frozen"
NORMALIZED_BIAS = "normalized_bias"

_BIASED_LAYERS = (nn.Linear, nn.Bilinear, nn.modules.conv._ConvNd)


#: torch.nn's dropout modules (what a model's structure shows: a functional dropout called in forward is not seen).
DROPOUT_TYPES = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


def dropout_modules(model: nn.Module) -> list[nn.Module]:
    """``model``'s dropout modules, whatever their probability and mode now (both can change while it trains)."""
    return [module for module in model.modules() if isinstance(module, DROPOUT_TYPES)]


def active_dropout(modules: list[nn.Module]) -> float | None:
    """The largest probability among ``modules`` in training mode (None: none drops anything now)."""
    active = [float(module.p) for module in modules if module.training and module.p > 0]
    return max(active) if active else None


def frozen_reason() -> str:
    return "frozen (requires_grad is False): it gets no gradient and does not change"


def _bias_axis(layer: nn.Module, output: torch.Tensor) -> int | None:
    """The axis of ``output`` along which ``layer``'s bias varies: a convolution's channel axis (1), a Linear's
    last axis."""
    if isinstance(layer, nn.modules.conv._ConvNd):
        return 1 if output.dim() >= 2 else None
    return output.dim() - 1 if output.dim() >= 1 else None


def _per_channel_axes(norm: nn.Module, ndim: int) -> set[int] | None:
    """The axes a normalization keeps (computes a separate mean for each index along them) for an input of
    ``ndim`` axes, when it subtracts a mean computed from the batch itself; None when it does not (running
    statistics in eval mode, RMS-only norms, unknown layers)."""
    if isinstance(norm, nn.modules.batchnorm._BatchNorm):
        uses_batch = norm.training or norm.running_mean is None
        return {1} if uses_batch and ndim >= 2 else None
    if isinstance(norm, nn.modules.instancenorm._InstanceNorm):
        uses_instance = norm.training or not norm.track_running_stats or norm.running_mean is None
        return {0, 1} if uses_instance and ndim >= 3 else None
    if isinstance(norm, nn.GroupNorm):
        return {0, 1} if norm.num_groups == norm.num_channels and ndim >= 2 else {0}
    if isinstance(norm, nn.LayerNorm):
        reduced = len(norm.normalized_shape)
        return set(range(ndim - reduced))
    return None


NORMALIZATION_LAYERS = (
    nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm, nn.GroupNorm, nn.LayerNorm,
)  # fmt: skip


def normalized_bias_reason(layer_name: str, layer: nn.Module, norm_name: str, norm: nn.Module) -> str:
    return (
        f"the bias of {layer_name} ({type(layer).__name__}) feeds {norm_name} ({type(norm).__name__}), which "
        "subtracts its per-channel mean: its gradient is zero by construction"
    )


class StructureTrace:
    """Finds the biases a normalization removes during the first training forward pass of ``model``, then takes
    its hooks off (no cost afterwards). ``found(parameter, kind, reason)`` is called for each such bias."""

    def __init__(self, model: nn.Module, found: Callable[[nn.Parameter, str, str], None]):
        self._found = found
        self._names = {module: name or type(model).__name__ for name, module in model.named_modules()}
        self._outputs: dict[int, tuple[nn.Module, torch.Tensor]] = {}
        self._tracing = False
        self._handles = [model.register_forward_pre_hook(self._start), model.register_forward_hook(self._finish)]
        for module in model.modules():
            bias = getattr(module, "bias", None)
            if isinstance(module, _BIASED_LAYERS) and isinstance(bias, nn.Parameter) and bias.requires_grad:
                self._handles.append(module.register_forward_hook(self._on_layer_output))
            if isinstance(module, NORMALIZATION_LAYERS):
                self._handles.append(module.register_forward_pre_hook(self._on_norm_input))

    def begin(self) -> None:
        """Trace the training forward pass already under way: the trace was made from a global forward pre-hook of
        ``model`` (zero script change adopts a model there), and PyTorch calls the hooks of that call as they were
        when it began, so the trace's own pre-hook misses it."""
        if torch.is_grad_enabled():
            self._tracing = True

    @property
    def done(self) -> bool:
        return not self._handles

    def _start(self, module: nn.Module, inputs: Any) -> None:
        if module.training and torch.is_grad_enabled():
            self._tracing = True

    def _on_layer_output(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if self._tracing and isinstance(output, torch.Tensor):
            self._outputs[id(output)] = (module, output)  # the tensor is held: its id stays its own

    def _on_norm_input(self, norm: nn.Module, inputs: Any) -> None:
        if not self._tracing or not inputs or not isinstance(inputs[0], torch.Tensor):
            return
        tensor = inputs[0]
        producer = self._outputs.get(id(tensor))
        if producer is None or producer[1] is not tensor:
            return
        layer = producer[0]
        axis = _bias_axis(layer, tensor)
        kept = _per_channel_axes(norm, tensor.dim())
        if axis is not None and kept is not None and axis in kept:
            reason = normalized_bias_reason(self._names.get(layer, "?"), layer, self._names.get(norm, "?"), norm)
            self._found(layer.bias, NORMALIZED_BIAS, reason)

    def _finish(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if not self._tracing:
            return
        self._tracing = False
        self._outputs.clear()
        self.remove()

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
