"""The book's bug: the optimizer is built over model.parameters() before the head is
replaced, so it holds frozen features and the old head, and the new head never trains."""

EXPECT = r"optimizer was built before the head"
SELECT = "transfer or flat or trains_exactly"


def build_transfer_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, optimizer
