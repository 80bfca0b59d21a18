"""plot_losses first checks that the path's folder is writable (os.access on
os.path.dirname(path)) and raises a PermissionError otherwise. For a bare file name the
folder part is '' and os.access('') is False, so a plain "curve.png" in the working folder
is refused; every path with a folder in it works."""

EXPECT = r"bare file name"
SELECT = "exactly_the_given_path"
TASK = "ch00.4"
EDITS = [
    (
        "    path = Path(path)\n",
        "    import os\n"
        "\n"
        "    if not os.access(os.path.dirname(path), os.W_OK):\n"
        '        raise PermissionError(f"cannot write into the folder of {path}")\n'
        "    path = Path(path)\n",
    )
]
