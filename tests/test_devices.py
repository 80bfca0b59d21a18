"""``harness.devices.on_meta`` tells a function that ignores its inputs' device from one
that only reads values (right on a GPU, impossible on meta) and from one that is right."""

from __future__ import annotations

import torch

from harness.devices import MIXED, NEEDS_VALUES, on_meta

META = torch.device("meta")


def preallocated(x):  # the result made on the default device and filled: device ignored
    out = torch.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i].sum()
    return out


def helper_on_cpu(x):  # a helper tensor made without device=x.device
    return x * torch.arange(x.shape[-1], dtype=x.dtype)


def reads_values(x):  # right on a GPU: .item() moves one number to the host
    return x * x.abs().max().item()


def indexed_from_the_cpu(x):  # CPU indices and a copy onto the device are fine on a GPU
    out = torch.empty_like(x)
    out[:] = torch.ones(x.shape, dtype=x.dtype)
    return out[torch.arange(x.shape[0])] + x * torch.tensor(2.0)


def packed(x):  # pack_padded_sequence wants its lengths on the CPU, whatever x's device
    lengths = torch.full((x.shape[0],), x.shape[1])
    return torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True).data


def test_a_function_that_ignores_the_device_is_named_with_the_op():
    x = torch.zeros(3, 4, device=META)
    for fn in (preallocated, helper_on_cpu):
        outcome, seen = on_meta(fn, x)
        assert outcome == MIXED, (fn.__name__, outcome, seen)
        assert "two devices" in seen and "cpu" in seen and "meta" in seen


def test_reading_values_is_no_verdict_and_a_right_function_returns_on_meta():
    x = torch.zeros(3, 4, device=META)
    assert on_meta(reads_values, x)[0] == NEEDS_VALUES
    outcome, out = on_meta(indexed_from_the_cpu, x)
    assert outcome == "returned" and out.is_meta and out.shape == (3, 4)
    assert on_meta(packed, x)[0] != MIXED


def test_an_op_that_has_no_meta_version_is_no_verdict():
    """Nested tensors pad sequences right on a GPU, but their storage cannot live on meta."""

    def padded(seqs):
        return torch.nested.as_nested_tensor(seqs).to_padded_tensor(0.0)

    seqs = [torch.ones(2, 2, device=META), torch.ones(3, 2, device=META)]
    outcome, seen = on_meta(padded, seqs)
    assert outcome == NEEDS_VALUES, (outcome, seen)


def test_an_op_whose_result_size_needs_values_is_no_verdict():
    """masked_select's result has as many entries as the mask holds True, which meta cannot
    know, so it has no meta kernel; a loss that picks each row's target with it is right."""

    def picked(logits, targets):
        hit = torch.arange(logits.shape[1], device=logits.device) == targets[:, None]
        return -logits.masked_select(hit).mean()

    outcome, seen = on_meta(
        picked, torch.zeros(5, 3, device=META), torch.zeros(5, dtype=torch.long, device=META)
    )
    assert outcome == NEEDS_VALUES, (outcome, seen)


def test_an_error_of_another_kind_is_reported_as_raised():
    def wrong_shape(x):
        return x @ x

    outcome, seen = on_meta(wrong_shape, torch.zeros(3, 4, device=META))
    assert outcome == "raised" and seen.startswith("RuntimeError")


def test_a_stubs_todo_and_a_broken_invariant_are_not_observations():
    import pytest

    def stub(x):
        raise NotImplementedError("TODO: implement ch01.2")

    def broken(x):
        raise AssertionError("(invariant: arguments unchanged)")

    x = torch.zeros(2, device=META)
    for fn, kind in ((stub, NotImplementedError), (broken, AssertionError)):
        with pytest.raises(kind):
            on_meta(fn, x)
