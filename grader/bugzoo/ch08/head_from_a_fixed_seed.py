"""build_transfer_setup seeds the global generator before building the head "for
reproducibility": every model gets the same head, and the caller's random stream restarts."""

EXPECT = r"same new head"
SELECT = "other_sizes"

EDITS = [
    (
        "    model.head = nn.Linear(model.head.in_features, model.head.out_features)",
        "    torch.manual_seed(0)\n"
        "    model.head = nn.Linear(model.head.in_features, model.head.out_features)",
    )
]
