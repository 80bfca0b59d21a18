"""The Normalizer is fitted on training and validation images together: validation data
shapes the statistics (a leak that is invisible in the accuracy here)."""

EXPECT = r"training images only|only on them"
SELECT = "pipeline or scaling"


def train_with_pipeline(scale, seed=0, epochs=20):
    train_x, train_y, val_x, val_y = make_stripe_task(seed)
    normalizer = fit_normalizer(torch.cat([train_x, val_x])) if scale else None
    train_in = normalizer.apply(train_x) if scale else train_x.float()
    val_in = normalizer.apply(val_x) if scale else val_x.float()
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 6 * 6, 32), nn.ReLU(), nn.Linear(32, 3))
    order = torch.Generator().manual_seed(seed)
    epoch_losses = []
    for _ in range(epochs):
        total = 0.0
        for idx in torch.randperm(len(train_in), generator=order).split(32):
            loss = F.cross_entropy(model(train_in[idx]), train_y[idx])
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
            total += loss.item() * len(idx)
        epoch_losses.append(total / len(train_in))
    with torch.no_grad():
        accuracy = (model(val_in).argmax(dim=1) == val_y).float().mean().item()
    seen = torch.cat([train_in.flatten(), val_in.flatten()])  # everything the model was fed
    return PipelineRun(seen.min().item(), seen.max().item(), epoch_losses, accuracy, normalizer)
