"""generate switches the model to eval mode for sampling and "restores" training mode at the
end, whatever mode the caller had: a model handed over in eval mode comes back training."""

EXPECT = r"from evaluation to training mode"
SELECT = "continues_the_generator"
EDITS = [
    (
        "    for _ in range(max_new_tokens):\n",
        "    model.eval()\n    for _ in range(max_new_tokens):\n",
    ),
    ("    return idx\n", "    model.train()\n    return idx\n"),
]
