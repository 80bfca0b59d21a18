"""Statistics in float64 with an exact min == max test for a constant channel, apply() that
broadcasts with the channel axis moved last, and a check_contract that pairs channels by
augmenting paths, words its messages differently and lists the statistics verdict before range
and dtype. Still the contract: per-channel (unbiased) std, stored statistics only, every clause."""

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Normalizer:
    """Per-channel statistics of a training set: ``mean`` and ``std`` are float32 (C,)."""

    mean: torch.Tensor
    std: torch.Tensor

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """(x - mean) / std per channel for x (N, C, ...) of any dtype; float32, same shape."""
        last = x.to(torch.float32).movedim(1, -1)  # (N, ..., C): the stats broadcast as (C,)
        return ((last - self.mean) / self.std).movedim(-1, 1)


def fit_normalizer(train_x: torch.Tensor) -> Normalizer:
    """Per-channel mean and (unbiased) std over every dim except 1, computed in float64."""
    per_channel = train_x.transpose(0, 1).flatten(1).to(torch.float64)  # (C, rest)
    var, mean = torch.var_mean(per_channel, dim=1)
    flat = per_channel.amin(dim=1) == per_channel.amax(dim=1)  # no spread at all
    std = torch.where(flat, torch.ones_like(var), var.sqrt())
    return Normalizer(mean.to(torch.float32), std.to(torch.float32))


def _stats_along(x: torch.Tensor, axis: int) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 mean and unbiased std of each slice of ``x`` along ``axis``."""
    dims = [d for d in range(x.dim()) if d != axis]
    std, mean = torch.std_mean(x.to(torch.float64), dim=dims)
    return mean, std


def _pairing(mean: torch.Tensor, std: torch.Tensor, contract: Contract) -> list[int] | None:
    """A one-to-one assignment of observed channels to contract channels whose statistics
    agree (the identity when it works), found with augmenting paths; None when there is none."""
    want_mean = torch.tensor(contract.channel_mean, dtype=torch.float64)
    want_std = torch.tensor(contract.channel_std, dtype=torch.float64)
    if mean.numel() != want_mean.numel():
        return None
    room = contract.tol * want_std
    ok = ((mean.unsqueeze(1) - want_mean).abs() <= room) & (
        (std.unsqueeze(1) - want_std).abs() <= room
    )
    n = mean.numel()
    if all(bool(ok[c, c]) for c in range(n)):
        return list(range(n))
    owner = [-1] * n  # owner[k]: observed channel currently paired with contract channel k

    def augment(c: int, seen: set[int]) -> bool:
        for k in range(n):
            if bool(ok[c, k]) and k not in seen:
                seen.add(k)
                if owner[k] < 0 or augment(owner[k], seen):
                    owner[k] = c
                    return True
        return False

    for c in range(n):
        if not augment(c, set()):
            return None
    pairing = [0] * n
    for k, c in enumerate(owner):
        pairing[c] = k
    return pairing


def check_contract(batch: torch.Tensor, contract: Contract) -> list[str]:
    """Every way ``batch`` (N, C, H, W) breaks ``contract``; an empty list if none."""
    problems: list[str] = []
    values = batch.detach()
    mean, std = _stats_along(values, 1)
    pairing = _pairing(mean, std, contract)
    if pairing is not None and pairing != list(range(len(pairing))):
        problems.append(f"channel order: observed channels fit contract channels {pairing}")
    elif pairing is None:
        if values.dim() == 4 and _pairing(*_stats_along(values, 3), contract) is not None:
            problems.append("channel order: statistics fit with channels on the last axis")
        else:
            problems.append(
                f"normalization: channel means {[round(v, 4) for v in mean.tolist()]}, "
                f"stds {[round(v, 4) for v in std.tolist()]}, expected "
                f"{list(contract.channel_mean)} / {list(contract.channel_std)}"
            )
    lo, hi = contract.value_range
    as_float = values.to(torch.float64)
    escaped = as_float.lt(lo).any() | as_float.gt(hi).any() | as_float.isnan().any()
    if bool(escaped):
        problems.append(f"range: some values fall outside [{lo}, {hi}] (or are nan)")
    if batch.dtype != contract.dtype:
        problems.append(f"dtype: got {batch.dtype}, want {contract.dtype}")
    return problems
