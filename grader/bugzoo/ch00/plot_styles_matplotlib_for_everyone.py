"""The plot is styled by setting matplotlib's global settings (a grid, a smaller dpi) and
never putting them back: every later figure in the caller's process is styled too."""

EXPECT = r"rcParams"
SELECT = "plot"
EDITS = [
    (
        "    path = Path(path)\n",
        '    plt.rcParams["axes.grid"] = True\n    plt.rcParams["figure.dpi"] = 80\n'
        "    path = Path(path)\n",
    )
]
