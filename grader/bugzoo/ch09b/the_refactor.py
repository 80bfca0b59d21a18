"""The chapter's refactor: the seed moved below model construction and the shuffle got a
local generator that is never seeded."""

EXPECT = r"seed"
SELECT = "make_run or calls or seed or global or order"


def make_run(config, seed):
    X, y = make_data(config)
    model = build_model(config)
    init_fingerprint = fingerprint(model.state_dict())
    torch.manual_seed(seed)
    order_gen = torch.Generator()
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
    return RunResult(losses, init_fingerprint, fingerprint(orders))
