"""The count of windows is np.floor_divide(size + 2p - span, s) + 1: the same numbers, but
numpy integers (numpy.int64), not the Python ints the reading asks for; they compare equal
to ints, so only the type of each size tells them apart."""

import numpy as np  # noqa: F401 (the edited line below uses it)

EXPECT = r"Python ints"
TASK = "ch06.2"
EDITS = [
    (
        "        out.append((size + 2 * p - span) // s + 1)\n",
        "        out.append(np.floor_divide(size + 2 * p - span, s) + 1)\n",
    )
]
