"""The repaired setup builds SGD with momentum 0.9 over the new head: the first step is plain
SGD's, every later one also carries the earlier gradients, so it is not the contract's
SGD at lr 0.1."""

EXPECT = r"no momentum"
SELECT = "sgd_at_lr"


def build_transfer_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, torch.optim.SGD(model.head.parameters(), lr=0.1, momentum=0.9)
