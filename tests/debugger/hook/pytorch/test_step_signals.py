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
from debugger.hook.pytorch.step_signals import HOST_LABELS, GradientNorm, StepLabels, StepSignals
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
    # 42 and 162 parameter tensors, every one small: the gradient norm takes the flat buffer (decision 196)
    ops, saved = _train(10, "ops", zero_change, tmp_path / "small_ops")
    more_ops, _ = _train(40, "ops", zero_change, tmp_path / "large_ops")
    calls, _ = _train(10, "calls", zero_change, tmp_path / "small_calls")
    more_calls, _ = _train(40, "calls", zero_change, tmp_path / "large_calls")
    steps = len(MEASURED_STEPS)
    assert not set(MEASURED_STEPS) & set(saved)  # the steps measured are steps that save nothing
    # not one torch operation nor one function call more per step
    assert more_ops == ops
    assert more_calls == calls
    # the gradient norm: one copy per shape of gradient (vectors, rows of 16) into the buffer, no kernel per tensor;
    # nothing reads a value back to the host (item, float, bool of a tensor: _local_scalar_dense) but the step's one
    # transfer (a CPU batch's fingerprints and label tally go through the host)
    assert ops["_foreach_norm"] == 0
    assert ops["cat"] == 2 * steps
    assert ops["_local_scalar_dense"] == 0
    assert calls["c.tolist"] == 3 * steps and calls["c.item"] == 0  # the step's read, the labels and their top class


def test_the_gradient_norm_is_the_one_torch_computes():
    model = residual_mlp(6)
    model(torch.randn(8, 16)).pow(2).sum().backward()
    named = list(model.named_parameters())
    gradients = [parameter.grad for _, parameter in named]
    norm = GradientNorm().total(named, gradients)  # 26 tensors: the per-tensor norms
    assert norm.item() == torch.nn.utils.get_total_norm(gradients, 2.0).item()
    mixed = [gradients[0].double(), *gradients[1:]]  # two dtypes: torch's own grouping computes it
    assert GradientNorm().total([("a", None)], mixed).item() == torch.nn.utils.get_total_norm(mixed, 2.0).item()


def _many_small_and_some_large(seed: int) -> list[torch.Tensor]:
    """Gradients of every shape the flat buffer groups: 0-d, vectors, rows of several widths, 4-d kernels, and tensors
    too large for it (kept on their own norms); more values than one serial chunk holds."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(), (7,), (64, 64), (3, 5), (16, 3, 3, 3), (64,), (), (10, 64), (300, 200), (9000,)] * 8
    return [torch.randn(shape, generator=generator) * 10.0 ** int(torch.randint(-3, 3, (1,), generator=generator)) for shape in shapes]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_flat_norm_of_many_small_gradients_is_torch_s_up_to_rounding(seed):
    gradients = _many_small_and_some_large(seed)
    parameters = [object()] * len(gradients)
    computer = GradientNorm()
    norm = computer.total(parameters, gradients)
    assert computer._plan is not None and computer._plan.large is not None  # the flat buffer, and large tensors beside
    expected = torch.linalg.vector_norm(torch.cat([gradient.double().reshape(-1) for gradient in gradients]))
    assert norm.item() == pytest.approx(expected.item(), rel=1e-6)
    assert norm.item() == pytest.approx(torch.nn.utils.get_total_norm(gradients, 2.0).item(), rel=1e-6)
    # the next step's gradients (new tensors, as zero_grad(set_to_none=True) leaves them) go through the same plan
    later = [gradient * 2.0 for gradient in gradients]
    assert computer.total(parameters, later).item() == pytest.approx(2.0 * norm.item(), rel=1e-6)
    # a parameter without a gradient this step: the per-tensor norms, exactly torch's
    assert computer.total(parameters, later[1:]).item() == torch.nn.utils.get_total_norm(later[1:], 2.0).item()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1e20], ids=["nan", "inf", "overflowing_square"])
def test_the_flat_norm_is_not_finite_where_torch_s_is_not(bad):
    gradients = _many_small_and_some_large(5)
    gradients[13] = gradients[13].clone()
    gradients[13].view(-1)[3] = bad  # a small tensor's value: in the flat buffer
    computer = GradientNorm()
    norm = computer.total([object()] * len(gradients), gradients)
    assert computer._plan is not None
    reference = torch.nn.utils.get_total_norm(gradients, 2.0)
    assert torch.isfinite(reference).item() is False
    assert torch.isfinite(norm).item() is False
    assert torch.isnan(norm).item() == torch.isnan(reference).item()


def test_few_or_large_gradients_keep_the_per_tensor_norms():
    few = [torch.randn(16) for _ in range(10)]
    large = [torch.randn(100, 100) for _ in range(40)]
    for gradients in (few, large):
        computer = GradientNorm()
        norm = computer.total([object()] * len(gradients), gradients)
        assert computer._plan is None
        assert norm.item() == torch.nn.utils.get_total_norm(gradients, 2.0).item()


def _reference_tally(scores: torch.Tensor, labels: torch.Tensor) -> tuple[list[int], int] | None:
    """How the hook tallied labels before (boolean indexing and bincount, read back at once)."""
    counted = (labels >= 0) & (labels < scores.shape[1])
    if not bool(counted.any()):
        return None
    capped = labels[counted].clamp(max=MAX_COUNTED_CLASSES)
    counts = torch.bincount(capped, minlength=min(scores.shape[1], MAX_COUNTED_CLASSES + 1)).tolist()
    return counts, int((scores.argmax(dim=1)[counted] == labels[counted]).sum())


@pytest.mark.parametrize("classes", [2, 10, MAX_COUNTED_CLASSES + 1, MAX_COUNTED_CLASSES + 50])
@pytest.mark.parametrize("largest", [100, 3 * HOST_LABELS], ids=["host_loop", "tensor_operations"])
def test_the_label_tally_read_with_the_step_counts_what_the_labels_hold(classes, largest):
    generator = torch.Generator().manual_seed(classes)
    for batch in range(12):
        size = int(torch.randint(1, largest, (1,), generator=generator))
        if largest > HOST_LABELS:
            size = max(size, HOST_LABELS + 1)
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
