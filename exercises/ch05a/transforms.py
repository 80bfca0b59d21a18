"""ch05a — Transforms: what the model actually sees. Read course/ch05a.md, then replace each
NotImplementedError and repair train_with_pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

# Orientation labels of the chapter's arrow task: what a horizontal flip does to each.
LEFT, RIGHT, UP, DOWN = 0, 1, 2, 3


@dataclass(frozen=True)
class Normalizer:
    """Per-channel statistics of a training set: ``mean`` and ``std`` are float32 (C,)."""

    mean: torch.Tensor
    std: torch.Tensor

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """(x - mean) / std per channel for x (N, C, ...) of any dtype; float32, same shape.
        Uses only the stored statistics, never those of ``x``."""
        raise NotImplementedError(
            "ch05a.1 apply — see course/ch05a.md#fit-on-the-training-data-only"
        )


class Contract(NamedTuple):
    """What a model expects of an input batch (N, C, H, W): its dtype, the interval every value
    lies in, and the per-channel mean and std (over N, H, W) of a correctly prepared batch.
    Statistics within ``tol`` (in units of the channel's expected std, the bound included)
    count as matching."""

    dtype: torch.dtype
    value_range: tuple[float, float]
    channel_mean: tuple[float, ...]
    channel_std: tuple[float, ...]
    tol: float = 0.25


class PipelineRun(NamedTuple):
    """One training run: the range of every input the model saw (training and validation), the
    mean loss of every epoch, the final validation accuracy, and the Normalizer (None without scaling)."""

    input_min: float
    input_max: float
    epoch_losses: list[float]
    val_accuracy: float
    normalizer: Normalizer | None


# ---------------------------------------------------------------------------------------
# The chapter's data (not an exercise: complete in the stub too)
# ---------------------------------------------------------------------------------------


def make_stripe_task(
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Images of a bright vertical stripe (left, middle or right: the class) on a background whose
    brightness changes from image to image. Returns (train_x uint8 (240, 3, 6, 6), train_y int64,
    val_x uint8 (60, 3, 6, 6), val_y int64); classes appear in proportions 40/30/30 in both."""
    g = torch.Generator().manual_seed(seed)

    def split(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        counts = [n * 4 // 10, n * 3 // 10, n - n * 4 // 10 - n * 3 // 10]
        y = torch.cat([torch.full((k,), c) for c, k in enumerate(counts)])
        y = y[torch.randperm(n, generator=g)]
        base = torch.randint(40, 160, (n, 1, 1, 1), generator=g)  # exposure of each image
        x = base + torch.randint(-20, 21, (n, 3, 6, 6), generator=g)  # (N, C, H, W)
        stripe = (torch.arange(6) // 2 == y.view(n, 1)).view(n, 1, 1, 6)  # columns of class y
        x = x + 40 * stripe
        return x.clamp(0, 255).to(torch.uint8), y

    train_x, train_y = split(240)
    val_x, val_y = split(60)
    return train_x, train_y, val_x, val_y


# ---------------------------------------------------------------------------------------
# Exercises
# ---------------------------------------------------------------------------------------


def fit_normalizer(train_x: torch.Tensor) -> Normalizer:
    """Per-channel mean and std of ``train_x`` (N, C, ...), over every dim except 1, in float32.
    A channel with zero spread gets std 1 instead of 0."""
    raise NotImplementedError(
        "ch05a.1 fit_normalizer — see course/ch05a.md#fit-on-the-training-data-only"
    )


def check_contract(batch: torch.Tensor, contract: Contract) -> list[str]:
    """Every way ``batch`` (N, C, H, W) breaks ``contract``; an empty list if none.

    Each violation is one string starting with its kind — "dtype", "range", "channel order"
    or "normalization" — then a colon and what was observed. The checks are independent:
    a batch that breaks several clauses gets one violation for each, not only the first.
    Channel order (channels permuted, or stored last) is recognised from the per-channel
    statistics.
    """
    raise NotImplementedError(
        "ch05a.2 check_contract — see course/ch05a.md#a-legal-tensor-a-wrong-meaning"
    )


def flip_with_label(
    image: torch.Tensor, label: int | torch.Tensor
) -> tuple[torch.Tensor, int | torch.Tensor]:
    """Mirror ``image`` (..., H, W) left-right (along W) and return the label of the mirrored
    picture: LEFT and RIGHT swap, UP and DOWN stay. ``label`` is an int or an int64 tensor."""
    raise NotImplementedError(
        "ch05a.3 flip_with_label — see course/ch05a.md#augmentations-that-change-the-answer"
    )


def train_with_pipeline(scale: bool, seed: int = 0, epochs: int = 20) -> PipelineRun:
    """Train the chapter's small MLP (SGD, lr 0.01, batches of 32) on ``make_stripe_task(seed)``.

    With ``scale`` the images pass through a Normalizer fitted on the training images only;
    without it the model sees raw pixel values. Same model initialisation and batch order
    either way.
    """
    train_x, train_y, val_x, val_y = make_stripe_task(seed)
    normalizer = None
    # TODO(ch05a.4, repair): `scale` is ignored — the model always sees raw pixel values.
    train_in, val_in = train_x.float(), val_x.float()
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 6 * 6, 32), nn.ReLU(), nn.Linear(32, 3))
    order = torch.Generator().manual_seed(seed)
    epoch_losses = []
    for _ in range(epochs):
        total = 0.0
        for idx in torch.randperm(len(train_in), generator=order).split(32):
            loss = F.cross_entropy(model(train_in[idx]), train_y[idx])
            model.zero_grad()
            loss.backward()
            with torch.no_grad():  # plain SGD, lr 0.01
                for p in model.parameters():
                    p -= 0.01 * p.grad
            total += loss.item() * len(idx)
        epoch_losses.append(total / len(train_in))
    with torch.no_grad():
        accuracy = (model(val_in).argmax(dim=1) == val_y).float().mean().item()
    seen = torch.cat([train_in.flatten(), val_in.flatten()])  # everything the model was fed
    return PipelineRun(seen.min().item(), seen.max().item(), epoch_losses, accuracy, normalizer)
