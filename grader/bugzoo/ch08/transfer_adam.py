"""The repaired setup trains the new head with Adam instead of the contract's SGD at lr 0.1."""

EXPECT = r"SGD at lr 0.1"
SELECT = "transfer"


def build_transfer_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, torch.optim.Adam(model.head.parameters(), lr=0.1)
