"""savefig is left to guess the format from the path: a path ending in .jpg or .pdf gets
a JPEG or a PDF, and a name without a suffix gets ".png" added, so nothing is at the path."""

EXPECT = r"format='png'"
SELECT = "plot"
EDITS = [('    fig.savefig(path, format="png")\n', "    fig.savefig(path)\n")]
