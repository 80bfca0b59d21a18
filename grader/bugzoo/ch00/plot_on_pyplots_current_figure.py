"""Draws with plt.plot on pyplot's current figure, saves it and closes it: the caller's open
figure is drawn on and then closed under them."""

EXPECT = r"pyplot|caller's (open )?figure"
SELECT = "plot"


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    plt.plot(range(len(losses)), losses, marker=".")
    finite = [v for v in losses if math.isfinite(v)]
    if finite and min(finite) > 0 and max(finite) / min(finite) > 100:
        plt.yscale("log")
    plt.savefig(path, format="png")
    plt.close()
    return path
