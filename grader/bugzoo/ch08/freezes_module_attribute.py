"""``model.features.requires_grad = False`` sets a plain attribute on the module: no
parameter is frozen, so the optimizer over the trainable parameters trains the features."""

EXPECT = r"frozen"
SELECT = "transfer or flat or trains_exactly"


def build_transfer_setup(model):
    model.features.requires_grad = False
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    return model, optimizer
