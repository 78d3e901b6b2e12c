"""The every-step signals (debugger.hook.pytorch.step_signals): the same values as torch's own reductions, and a
step that saves nothing costs the hook the same work whatever the number of parameter tensors: no operation per
tensor, no read from the device but the step's one (issue 47's bound on the hook's own work on fast steps)."""

from __future__ import annotations

import collections
import sys

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from contracts.training_labels import MAX_COUNTED_CLASSES
from debugger import Hook
from debugger.hook.pytorch.step_signals import GradientNorm, StepLabels, StepSignals
from debugger.hook.zero_change.pytorch import AutomaticHook, TorchWatcher
from debugger.trial import create_trial

RULES = [
    {
        "RuleConfigurationName": "ExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"StopTraining"}]'},
    },
    {"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}},
    {"RuleConfigurationName": "LossNotDecreasing", "RuleParameters": {"rule_to_invoke": "LossNotDecreasing"}},
]
#: Steps neither the save interval (500) nor the rules' own saves (VanishingGradient's first steps, LossNotDecreasing's
#: weights every 10) save: the test asserts it.
MEASURED_STEPS = range(3, 9)
EXPLICIT_ENTRIES = ("_on_forward_start", "_on_module_output", "_on_loss", "end_step")
ZERO_CHANGE_ENTRIES = (
    "_forward_pre", "_forward_post", "_before_backward", "_after_backward", "_before_optimizer_step", "_after_optimizer_step",
)  # fmt: skip


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm, self.linear = nn.LayerNorm(width), nn.Linear(width, width)

    def forward(self, inputs):
        return inputs + torch.relu(self.linear(self.norm(inputs)))


def residual_mlp(blocks: int) -> nn.Module:
    return nn.Sequential(*[Block(16) for _ in range(blocks)], nn.Linear(16, 4))


class _Ops(TorchDispatchMode):
    def __init__(self, counts: collections.Counter):
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


class _Meter:
    """Counts what the hook's entry points do while ``step`` is one of MEASURED_STEPS: torch operations (``ops``) or
    Python and C function calls (``calls``), by name."""

    def __init__(self, what: str):
        self.what, self.step, self.depth = what, -1, 0
        self.counts: collections.Counter = collections.Counter()

    def wrap(self, owner, names) -> None:
        for name in names:
            method = getattr(owner, name)

            def timed(*args, __method=method, **kwargs):
                if self.depth or self.step not in MEASURED_STEPS:
                    return __method(*args, **kwargs)
                self.depth += 1
                try:
                    if self.what == "ops":
                        with _Ops(self.counts):
                            return __method(*args, **kwargs)
                    sys.setprofile(self._profile)
                    try:
                        return __method(*args, **kwargs)
                    finally:
                        sys.setprofile(None)
                finally:
                    self.depth -= 1

            setattr(owner, name, timed)

    def _profile(self, frame, event, arg) -> None:
        if event == "call":
            self.counts[frame.f_code.co_name] += 1
        elif event == "c_call":
            self.counts["c." + getattr(arg, "__name__", "?")] += 1


def _train(blocks: int, what: str, zero_change: bool, out_dir) -> tuple[collections.Counter, list[int]]:
    torch.manual_seed(0)
    model, criterion = residual_mlp(blocks), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    meter = _Meter(what)
    watcher = hook = None
    if zero_change:
        watcher = TorchWatcher(lambda: AutomaticHook.from_configs({}, RULES, out_dir=out_dir, job_name="signals"))
        meter.wrap(watcher, ZERO_CHANGE_ENTRIES)
        watcher.install()
    else:
        hook = Hook.from_configs({}, RULES, out_dir=out_dir, job_name="signals")
        meter.wrap(hook, EXPLICIT_ENTRIES)
        hook.register_module(model)
        hook.register_loss(criterion)
        hook.register_optimizer(optimizer)
    generator = torch.Generator().manual_seed(1)
    try:
        for step in range(MEASURED_STEPS.stop + 1):
            meter.step = step
            inputs, labels = torch.randn(8, 16, generator=generator), torch.randint(0, 4, (8,), generator=generator)
            optimizer.zero_grad(set_to_none=True)
            criterion(model(inputs), labels).backward()
            optimizer.step()
    finally:
        if watcher is not None:
            watcher.uninstall()
            hook = watcher.hook
        hook.close()
    return meter.counts, create_trial(str(out_dir)).steps()


@pytest.mark.parametrize("zero_change", [False, True], ids=["explicit", "zero_change"])
def test_a_step_that_saves_nothing_costs_the_same_whatever_the_number_of_parameter_tensors(tmp_path, zero_change):
    ops, saved = _train(5, "ops", zero_change, tmp_path / "small_ops")
    more_ops, _ = _train(20, "ops", zero_change, tmp_path / "large_ops")
    calls, _ = _train(5, "calls", zero_change, tmp_path / "small_calls")
    more_calls, _ = _train(20, "calls", zero_change, tmp_path / "large_calls")
    steps = len(MEASURED_STEPS)
    assert not set(MEASURED_STEPS) & set(saved)  # the steps measured are steps that save nothing
    # 22 and 82 parameter tensors: not one torch operation nor one function call more per step
    assert more_ops == ops
    assert more_calls == calls
    # the gradient norm is one fused operation; nothing reads a value back to the host (item, float, bool of a
    # tensor: _local_scalar_dense) but the step's one transfer (a CPU batch's fingerprints go through numpy, on the host)
    assert ops["_foreach_norm"] == steps
    assert ops["_local_scalar_dense"] == 0
    assert calls["c.tolist"] == steps and calls["c.item"] == 0


def test_the_gradient_norm_is_the_one_torch_computes():
    model = residual_mlp(6)
    model(torch.randn(8, 16)).pow(2).sum().backward()
    named = list(model.named_parameters())
    gradients = [parameter.grad for _, parameter in named]
    norm = GradientNorm().total(named, gradients)
    assert norm.item() == torch.nn.utils.get_total_norm(gradients, 2.0).item()
    mixed = [gradients[0].double(), *gradients[1:]]  # two dtypes: torch's own grouping computes it
    assert GradientNorm().total([("a", None)], mixed).item() == torch.nn.utils.get_total_norm(mixed, 2.0).item()


def _reference_tally(scores: torch.Tensor, labels: torch.Tensor) -> tuple[list[int], int] | None:
    """How the hook tallied labels before (boolean indexing and bincount, read back at once)."""
    counted = (labels >= 0) & (labels < scores.shape[1])
    if not bool(counted.any()):
        return None
    capped = labels[counted].clamp(max=MAX_COUNTED_CLASSES)
    counts = torch.bincount(capped, minlength=min(scores.shape[1], MAX_COUNTED_CLASSES + 1)).tolist()
    return counts, int((scores.argmax(dim=1)[counted] == labels[counted]).sum())


@pytest.mark.parametrize("classes", [2, 10, MAX_COUNTED_CLASSES + 1, MAX_COUNTED_CLASSES + 50])
def test_the_label_tally_read_with_the_step_counts_what_the_labels_hold(classes):
    generator = torch.Generator().manual_seed(classes)
    for batch in range(12):
        size = int(torch.randint(1, 100, (1,), generator=generator))
        labels = torch.randint(-2, classes + 3, (size,), generator=generator)  # some outside [0, classes)
        if batch % 3 == 0:
            labels[labels % 2 == 0] = -100  # ignore_index
        scores = torch.randn(size, classes, generator=generator)
        scores[torch.arange(size), labels.clamp(0, classes - 1)] += 3.0 * (batch % 2)
        signals = StepSignals()
        signals.labels.append(StepLabels(scores, labels, dropout=0.1))
        read = signals.read(None, None)
        counts, matched, dropout = read.labels[0]
        expected = _reference_tally(scores, labels)
        assert (counts, matched) == expected if expected is not None else not any(counts)
        assert dropout == 0.1


def test_the_loss_and_gradient_norm_come_back_in_one_read_as_their_float32_values():
    loss = torch.tensor([0.1234567, 2.5], dtype=torch.float32)
    parameter = nn.Parameter(torch.ones(3))
    parameter.grad = torch.tensor([1e-3, 3.0, float("nan")])
    read = StepSignals().read([("w", parameter)], loss)
    assert read.loss == float(loss.float().mean())
    assert read.gradient_norm != read.gradient_norm  # NaN: the non-finite check sees it
    assert StepSignals().read(None, None) == type(read)(None, None, [], [])
