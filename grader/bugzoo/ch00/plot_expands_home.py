"""A path that starts with '~' is expanded to the home folder, the shell's habit: the PNG
lands in $HOME instead of the folder named '~' the relative path points at."""

EXPECT = r"HOME"
SELECT = "plot"


def plot_losses(losses, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path).expanduser()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(range(len(losses)), losses, marker=".")
    fig.savefig(path, format="png")
    plt.close(fig)
    return path
