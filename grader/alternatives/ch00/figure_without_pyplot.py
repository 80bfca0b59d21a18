"""plot_losses never touches pyplot: it builds a matplotlib.figure.Figure of its own and an
Agg canvas for it, so there is no current figure to change and nothing to close (the figure
is garbage once the function returns). classify_curve works on a normalised copy, ratios
of the start, which is what "only ratios matter" means."""


def plot_losses(losses, path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    fig = Figure(figsize=(5, 3.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(list(range(len(losses))), list(losses), marker=".")
    finite = [v for v in losses if math.isfinite(v)]
    if finite and min(finite) > 0 and max(finite) / min(finite) > 100:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    fig.savefig(path, format="png")
    return path


def classify_curve(losses):
    if not losses:
        raise ValueError("classify_curve needs at least one loss value")
    start = losses[0]
    if start == 0:  # every fraction of a zero start is 0: a loss above it is far above
        end = losses[-1]
        return "diverging" if not math.isfinite(end) or end > 0 else "converging"
    ratios = [v / start for v in losses]  # a copy: the caller's list stays as it was
    end = ratios[-1]
    if not math.isfinite(end) or end > 2:
        return "diverging"
    rises = sum(1 for a, b in zip(ratios, ratios[1:]) if b > a)
    if len(ratios) > 1 and 3 * rises >= len(ratios) - 1 and end > 0.5:
        return "oscillating"
    return "converging" if end <= 0.1 else "slow"
