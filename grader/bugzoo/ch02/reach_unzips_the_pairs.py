"""Unzips the (name, tensor) pairs into two tuples first: with no parameters at all there
is nothing to unzip and the call raises instead of returning {}."""

EXPECT = r"names nothing: the answer is \{\}"
SELECT = "takes_every_mapping"
TASK = "ch02.1"
EDITS = [
    (
        "    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)\n",
        "    names, params = zip(\n"
        "        *(named_params.items() if isinstance(named_params, Mapping) else named_params)\n"
        "    )\n"
        "    pairs = list(zip(names, params))\n",
    )
]
