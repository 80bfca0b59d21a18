"""Each row pairs the loss of one prediction with the weight *after* the update."""

EXPECT = r"before the update"


def train_scalar(xs, targets, w0, lr, steps):
    x = torch.as_tensor(xs, dtype=torch.float32)
    y = torch.as_tensor(targets, dtype=torch.float32)
    w = torch.tensor(float(w0), requires_grad=True)
    ws, losses = [], []
    for _ in range(steps):
        loss = ((w * x - y) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad.zero_()
        ws.append(w.item())
    return TrainResult(w.item(), ws, losses)
