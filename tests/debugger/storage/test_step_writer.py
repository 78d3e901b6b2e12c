"""The step writer's copies: what the training thread hands it cannot change before it is written."""

from __future__ import annotations

import torch

from debugger.storage.step_writer import PackedSlice, PackedTensors


def test_a_pack_of_one_tensor_is_a_copy_not_a_view():
    weight = torch.ones(2, 3)
    packed = PackedTensors([weight])  # flatten_dense_tensors returns a view of a lone contiguous tensor
    weight.add_(1.0)  # the optimizer's in-place update, before the writer thread gets to the step
    assert PackedSlice(packed, 0).tensor().tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_a_pack_of_several_tensors_keeps_each_ones_values_and_shape():
    first, second = torch.arange(6.0).reshape(2, 3), torch.tensor([7.0])
    packed = PackedTensors([first, second])
    first.zero_()
    assert PackedSlice(packed, 0).tensor().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert PackedSlice(packed, 1).tensor().tolist() == [7.0]
