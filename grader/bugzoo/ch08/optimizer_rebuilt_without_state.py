"""diagnose deep-copies the model, then builds a new optimizer of the same class over the
copy's parameters with the same groups: the caller's optimizer state (momentum buffers,
Adam's moments and step count) is lost, so the copy does not run the caller's steps."""

EXPECT = r"state"
TASK = "ch08.2"

EDITS = [
    (
        "    model, optimizer = copy.deepcopy((model, optimizer))  # one memo: the copies share tensors\n",
        "    _m, _o = model, optimizer\n"
        "    model = copy.deepcopy(_m)\n"
        "    _map = {id(a): b for a, b in zip(_m.parameters(), model.parameters())}\n"
        "    optimizer = type(_o)(\n"
        "        [\n"
        "            {\n"
        "                **{k: v for k, v in g.items() if k != 'params'},\n"
        "                'params': [\n"
        "                    _map.get(id(p)) if id(p) in _map else p.detach().clone().requires_grad_(p.requires_grad)\n"
        "                    for p in g['params']\n"
        "                ],\n"
        "            }\n"
        "            for g in _o.param_groups\n"
        "        ]\n"
        "    )\n",
    )
]
