"""diagnose deep-copies the model and the optimizer separately, then points the copied
optimizer's param_groups at the copied model's parameters: its state stays keyed by the
tensors it no longer holds, so every step starts from fresh momentum / Adam moments."""

EXPECT = r"state"
TASK = "ch08.2"

EDITS = [
    (
        "    model, optimizer = copy.deepcopy((model, optimizer))  # one memo: the copies share tensors\n",
        "    _index = {id(p): i for i, p in enumerate(model.parameters())}\n"
        "    _where = [[_index.get(id(p)) for p in g['params']] for g in optimizer.param_groups]\n"
        "    model, optimizer = copy.deepcopy(model), copy.deepcopy(optimizer)\n"
        "    _mine = list(model.parameters())\n"
        "    for g, at in zip(optimizer.param_groups, _where):\n"
        "        g['params'] = [p if i is None else _mine[i] for p, i in zip(g['params'], at)]\n",
    )
]
