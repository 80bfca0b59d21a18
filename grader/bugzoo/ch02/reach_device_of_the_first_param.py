"""Reads the device of the first parameter to check the loss lives beside the parameters:
with no parameters at all there is no first one and the call raises instead of returning {}."""

EXPECT = r"names nothing: the answer is \{\}"
SELECT = "takes_every_mapping"
TASK = "ch02.1"
EDITS = [
    (
        "    reached: set[int] = set()  # ids of the leaf tensors the graph accumulates into\n",
        "    if loss.device != pairs[0][1].device:\n"
        "        raise ValueError('the loss and the parameters live on different devices')\n"
        "    reached: set[int] = set()  # ids of the leaf tensors the graph accumulates into\n",
    )
]
