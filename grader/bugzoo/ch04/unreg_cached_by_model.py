"""Remembers each model's answer by the model's id: a model edited after the first call
keeps its first answer."""

EXPECT = r"earlier call"
SELECT = "between_calls"

EDITS = [
    (
        "    registered = {id(m) for m in model.modules()}\n",
        "    if id(model) in _SEEN:\n        return list(_SEEN[id(model)])\n"
        "    registered = {id(m) for m in model.modules()}\n",
    ),
    (
        '            _collect(value, f"{prefix}.{name}" if prefix else name, registered, found)\n'
        "    return found\n",
        '            _collect(value, f"{prefix}.{name}" if prefix else name, registered, found)\n'
        "    _SEEN[id(model)] = list(found)\n    return found\n\n\n_SEEN: dict = {}\n",
    ),
]
