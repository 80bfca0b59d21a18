"""The "repair" drops the freeze: the new head learns, but the pretrained features are
trained too."""

EXPECT = r"frozen"
SELECT = "transfer or flat or trains_exactly"


def build_transfer_setup(model):
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)
