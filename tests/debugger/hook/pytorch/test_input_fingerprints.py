"""Fingerprints of training input rows (debugger.hook.pytorch.input_fingerprints): the same sample gives the same one in any
batch; a shifted, flipped or noised one another."""

from __future__ import annotations

import torch

from debugger.hook.pytorch.input_fingerprints import first_batch_tensor, row_fingerprint_tensor, row_fingerprints


def test_a_sample_keeps_its_fingerprint_in_any_batch_and_an_augmented_one_does_not():
    torch.manual_seed(0)
    images = torch.randn(16, 3, 32, 32)  # 3,072 values a row: its fingerprint reads 256 of them, spread over the row
    prints = row_fingerprints(images)
    assert len(set(prints)) == 16
    assert row_fingerprints(images[torch.randperm(16)].flip(0)) != prints
    assert sorted(row_fingerprints(images[torch.randperm(16)])) == sorted(prints)
    assert set(row_fingerprints(torch.roll(images, 1, dims=-1))).isdisjoint(prints)  # shifted one pixel
    assert set(row_fingerprints(images.flip(-1))).isdisjoint(prints)  # flipped
    assert set(row_fingerprints(images + 0.01 * torch.randn_like(images))).isdisjoint(prints)  # noised


def test_token_ids_and_half_precision_rows_are_fingerprinted_too():
    tokens = torch.randint(0, 1000, (8, 40))
    assert row_fingerprints(tokens) == row_fingerprints(tokens.clone())
    halves = torch.randn(8, 10).to(torch.bfloat16)
    assert len(set(row_fingerprints(halves))) == 8


def test_the_batch_is_the_first_positional_tensor_with_a_batch_dimension():
    batch = torch.zeros(4, 3)
    assert first_batch_tensor((torch.tensor(2.0), batch, torch.ones(4))) is batch
    assert first_batch_tensor(batch) is batch
    assert first_batch_tensor(("text", None)) is None


def test_the_fingerprints_computed_on_the_device_tell_the_same_rows_apart():
    torch.manual_seed(0)
    images = torch.randn(16, 3, 32, 32)
    prints = row_fingerprint_tensor(images).tolist()
    assert len(set(prints)) == 16 and all(0 <= value < 2**52 for value in prints)  # exact when read as float64
    assert sorted(row_fingerprint_tensor(images[torch.randperm(16)]).tolist()) == sorted(prints)
    assert set(row_fingerprint_tensor(torch.roll(images, 1, dims=-1)).tolist()).isdisjoint(prints)
    assert set(row_fingerprint_tensor(images + 0.01 * torch.randn_like(images)).tolist()).isdisjoint(prints)
    tokens = torch.randint(0, 1000, (8, 40))
    assert row_fingerprint_tensor(tokens).tolist() == row_fingerprint_tensor(tokens.clone()).tolist()
    assert len(set(row_fingerprint_tensor(torch.randn(8, 10).to(torch.bfloat16)).tolist())) == 8
    # the tally keeps rows by their low bits (contracts.training_inputs.InputRepeats): about half have the lowest set
    low = [value & 1 for value in row_fingerprint_tensor(torch.arange(4096).reshape(-1, 1).repeat(1, 8)).tolist()]
    assert 0.45 < sum(low) / len(low) < 0.55
