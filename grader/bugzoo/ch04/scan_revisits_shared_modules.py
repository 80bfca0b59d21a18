"""Walks every registration path of every module, so a submodule registered under two
parents is searched twice and its plain attributes are reported under both paths."""

EXPECT = r"registered under two"
SELECT = "unregistered"
EDITS = [
    (
        "    for prefix, module in model.named_modules():\n",
        "    for prefix, module in model.named_modules(remove_duplicate=False):\n",
    ),
]
