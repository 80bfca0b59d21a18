"""The head is never replaced: the optimizer trains the old head for the new task."""

EXPECT = r"fresh"
SELECT = "transfer or flat or trains_exactly"


def build_transfer_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    return model, torch.optim.SGD(model.head.parameters(), lr=0.1)
