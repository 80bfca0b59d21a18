"""The head is swapped first, but the optimizer still takes every parameter, frozen
features included."""

EXPECT = r"exactly"
SELECT = "transfer or flat or trains_exactly"


def build_transfer_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)
