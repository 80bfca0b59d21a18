"""The PNG is right, but the pyplot figure is never closed: every call leaks a figure."""

EXPECT = r"close"
SELECT = "plot"


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(range(len(losses)), losses, marker=".")
    fig.savefig(path, format="png")
    return path
