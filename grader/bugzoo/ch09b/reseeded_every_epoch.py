"""The shuffling generator is made and seeded anew every epoch: reproducible, and different
per seed, but every epoch visits the data in the same order."""

EXPECT = r"epoch"
SELECT = "epoch"


def make_run(config, seed):
    X, y = make_data(config)
    torch.manual_seed(seed)
    model = build_model(config)
    init_fingerprint = fingerprint(model.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    losses, orders = [], []
    for _ in range(config.epochs):
        order = torch.randperm(config.n, generator=torch.Generator().manual_seed(seed))
        orders.append(order)
        for start in range(0, config.n, config.batch_size):
            idx = order[start : start + config.batch_size]
            loss = ((model(X[idx]) - y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return RunResult(losses, init_fingerprint, fingerprint(orders))
