"""The state dict is taken before training but fingerprinted after it: its tensors share
storage with the parameters, so the "init" fingerprint describes the trained weights."""

EXPECT = r"before training|before the first step"
SELECT = "fingerprints_are"


def make_run(config, seed):
    X, y = make_data(config)
    torch.manual_seed(seed)
    model = build_model(config)
    init_state = model.state_dict()
    order_gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    losses, orders = [], []
    for _ in range(config.epochs):
        order = torch.randperm(config.n, generator=order_gen)
        orders.append(order)
        for start in range(0, config.n, config.batch_size):
            idx = order[start : start + config.batch_size]
            loss = ((model(X[idx]) - y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return RunResult(losses, fingerprint(init_state), fingerprint(orders))
