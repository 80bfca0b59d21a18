"""Examples of a batch are independent: the last example alone gives its row of the batch's
result.

A task whose contract computes each example of a batch on its own (``batch_linear``'s rows,
an attention's batch, a model's forward) declares its batched parameters in
``harness.contracts`` (``batch="q k v mask?"``). The harness calls it once more with only
the last example of each (a batch of one) and compares that row of the first result. This
catches a statistic taken over the batch dimension, a ``squeeze()`` that also drops a batch
of one, rows mixed by a wrong reshape, and work done on the first example only.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from harness import layouts


class Alone(NamedTuple):
    """A call's arguments cut down to the last example of a batch of ``size``: ``where``
    says which arguments were cut."""

    args: tuple
    kwargs: dict
    where: str
    size: int


def last_alone(args: tuple, kwargs: dict, names, batch: tuple[str, ...], least: int):
    """``args`` and ``kwargs`` with each batched parameter (``batch``: names, in order; a
    name ending in ``?`` is batched only where it has the first one's number of dims and
    batch size, else it is broadcast) cut to its last example, or None when the call has
    no batch of two or more (the first batched argument present must be a tensor of at
    least ``least`` dims)."""
    names = list(names)
    given = {n: ("arg", i) for i, n in enumerate(names[: len(args)])}
    given.update({k: ("kw", k) for k in kwargs})

    def value(place):
        return args[place[1]] if place[0] == "arg" else kwargs[place[1]]

    present = [(n.rstrip("?"), n.endswith("?")) for n in batch if n.rstrip("?") in given]
    if not present or present[0][1]:
        return None
    first = value(given[present[0][0]])
    if not isinstance(first, torch.Tensor) or first.dim() < max(least, 1):
        return None
    size = first.shape[0]
    if size < 2:
        return None
    new_args, new_kwargs, cut = list(args), dict(kwargs), []
    for name, optional in present:
        place = given[name]
        x = value(place)
        if not isinstance(x, torch.Tensor) or x.dim() == 0:
            continue
        if optional and (x.dim() != first.dim() or x.shape[0] != size):
            continue  # broadcast over the batch: every example sees all of it
        if x.shape[0] != size:
            return None  # the batched arguments disagree on the batch: not this contract's
        alone = x.detach()[size - 1 :].clone()
        if place[0] == "arg":
            new_args[place[1]] = alone
        else:
            new_kwargs[place[1]] = alone
        cut.append(f"`{name}`")
    where = " and ".join(cut)
    return Alone(tuple(new_args), new_kwargs, where, size)


def row_difference(full, alone, size: int, where: str = "the result") -> str | None:
    """Where ``alone`` (the result for the last example alone) differs from the last row of
    ``full`` (the result for the whole batch of ``size``), None where it does not: every
    tensor of the result whose first dimension is the batch is compared; what has no batch
    dimension (a mean loss, a count) is not."""
    if isinstance(full, torch.Tensor):
        if full.dim() == 0 or full.shape[0] != size:
            return None
        if not isinstance(alone, torch.Tensor):
            return f"{where}: a tensor for the batch, a {type(alone).__name__} for one example"
        return layouts.difference(full[size - 1 :], alone, where)
    if isinstance(full, list | tuple) and isinstance(alone, list | tuple):
        if len(full) != len(alone):
            return f"{where}: {len(full)} items vs {len(alone)}"
        fields = getattr(full, "_fields", None)
        for i, (a, b) in enumerate(zip(full, alone, strict=True)):
            name = f"{where}.{fields[i]}" if fields else f"{where}[{i}]"
            found = row_difference(a, b, size, name)
            if found:
                return found
    return None
