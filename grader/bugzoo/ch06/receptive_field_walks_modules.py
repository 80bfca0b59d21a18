"""receptive_field walks nn.Sequential(*layers).modules() (to reach nested containers too),
which yields each module object once: a layer applied twice counts once."""

EXPECT = r"only once"
SELECT = "applied_twice"
EDITS = [
    (
        "    for layer in layers:\n        if not isinstance",
        "    for layer in nn.Sequential(*layers).modules():\n        if not isinstance",
    )
]
