"""diagnose names the model's parameters from state_dict(keep_vars=True), which keeps every
registration: a weight tied across two layers is reported once per name it is saved under."""

EXPECT = r"tied parameter is one parameter"
TASK = "ch08.2"

EDITS = [
    (
        "    named = dict(model.named_parameters())\n",
        "    named = {\n"
        "        n: p for n, p in model.state_dict(keep_vars=True).items() if isinstance(p, nn.Parameter)\n"
        "    }\n",
    )
]
