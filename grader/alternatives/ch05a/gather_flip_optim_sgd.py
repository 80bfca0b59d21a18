"""The flip gathers columns with index_select and maps labels with torch.where; the statistics are
fitted one channel at a time; the repaired run normalizes each batch as it is drawn and steps with
torch.optim.SGD. Same contract: the same model, batch order, per-channel statistics and outputs."""

import torch
import torch.nn.functional as F
from torch import nn


def fit_normalizer(train_x: torch.Tensor) -> Normalizer:
    """Per-channel mean and std of ``train_x`` (N, C, ...), one channel at a time."""
    means, stds = [], []
    for c in range(train_x.shape[1]):
        values = train_x.select(1, c).reshape(-1).to(torch.float64)
        spread = values.std()
        means.append(values.mean())
        # one value repeated (or a single value) has no spread: divide by 1 instead
        stds.append(spread if bool((values != values[0]).any()) else torch.ones_like(spread))
    return Normalizer(torch.stack(means).to(torch.float32), torch.stack(stds).to(torch.float32))


def flip_with_label(
    image: torch.Tensor, label: int | torch.Tensor
) -> tuple[torch.Tensor, int | torch.Tensor]:
    """Mirror ``image`` (..., H, W) along W; LEFT and RIGHT swap, UP and DOWN stay."""
    width = image.shape[-1]
    columns = torch.arange(width - 1, -1, -1, device=image.device)
    mirrored = image.index_select(image.dim() - 1, columns)
    if not isinstance(label, torch.Tensor):
        if label in (LEFT, RIGHT):
            return mirrored, LEFT + RIGHT - label
        return mirrored, label
    swapped = torch.where(
        label == LEFT,
        torch.full_like(label, RIGHT),
        torch.where(label == RIGHT, torch.full_like(label, LEFT), label),
    )
    return mirrored, swapped


def train_with_pipeline(scale: bool, seed: int = 0, epochs: int = 20) -> PipelineRun:
    """Train the chapter's MLP; with ``scale`` every batch goes through a training-set Normalizer."""
    train_x, train_y, val_x, val_y = make_stripe_task(seed)
    normalizer = fit_normalizer(train_x) if scale else None

    def prepare(images: torch.Tensor) -> torch.Tensor:
        return normalizer.apply(images) if normalizer is not None else images.float()

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 6 * 6, 32), nn.ReLU(), nn.Linear(32, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    order = torch.Generator().manual_seed(seed)
    epoch_losses = []
    for _ in range(epochs):
        summed, seen = 0.0, 0
        for idx in torch.randperm(train_x.shape[0], generator=order).split(32):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(prepare(train_x[idx])), train_y[idx])
            loss.backward()
            optimizer.step()
            summed += loss.item() * idx.numel()
            seen += idx.numel()
        epoch_losses.append(summed / seen)
    model.eval()
    with torch.no_grad():
        predicted = model(prepare(val_x)).argmax(dim=1)
    accuracy = predicted.eq(val_y).sum().item() / val_y.numel()
    low_t, high_t = torch.aminmax(prepare(train_x))
    low_v, high_v = torch.aminmax(prepare(val_x))
    return PipelineRun(
        min(low_t.item(), low_v.item()),
        max(high_t.item(), high_v.item()),
        epoch_losses,
        accuracy,
        normalizer,
    )
