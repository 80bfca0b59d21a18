"""``gradient_at`` asks autograd for the derivative with ``torch.autograd.grad`` in float64
instead of ``backward()`` + ``.grad``; ``plot_losses`` draws on a bare ``Figure`` with the Agg
canvas (no pyplot, so no global backend switch and no figure to close) from a masked copy.
Both are still autograd and a headless PNG written to exactly ``path``."""

from pathlib import Path

import numpy as np
import torch


def gradient_at(w: float, x: float, target: float) -> float:
    """d/dw of (x*w - target)**2 at ``w``, obtained with autograd. Returns a Python float."""
    weight = torch.tensor(float(w), dtype=torch.float64, requires_grad=True)
    squared_error = torch.square(weight * float(x) - float(target))  # an int may pass int64
    (slope,) = torch.autograd.grad(squared_error, (weight,))
    return float(slope)


def plot_losses(losses: list[float], path: str | Path) -> Path:
    """Save a learning curve (loss per step, log scale when useful) as PNG bytes at exactly
    ``path``, whatever its suffix (or none); returns the path. ``losses`` is not changed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    target = Path(path)
    curve = np.array([float(v) for v in losses], dtype=np.float64)  # our own copy
    bad = ~np.isfinite(curve)
    shown = np.where(bad, np.nan, curve)  # non-finite points leave a gap in the line

    figure = Figure(figsize=(6.0, 4.0), dpi=80)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    axes.plot(np.arange(curve.size), shown, linewidth=1.2, marker="o", markersize=2)
    good = shown[~bad]
    if good.size > 1 and good.min() > 0 and good.max() > 100 * good.min():
        axes.set_yscale("log")
    if bad.any():
        first_bad = int(np.argmax(bad))
        axes.axvline(first_bad, color="red", linestyle="--", linewidth=1)
        axes.set_title(f"loss per step (non-finite from step {first_bad})")
    else:
        axes.set_title("loss per step")
    axes.set_xlabel("step")
    axes.set_ylabel("training loss")
    figure.tight_layout()
    figure.savefig(target, format="png")  # never registered with pyplot: nothing to close
    return target
