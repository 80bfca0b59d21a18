"""The gradient is never zeroed, so every step applies the sum of all gradients so far."""

EXPECT = r"zero"


def train_scalar(xs, targets, w0, lr, steps):
    x = torch.as_tensor(xs, dtype=torch.float32)
    y = torch.as_tensor(targets, dtype=torch.float32)
    w = torch.tensor(float(w0), requires_grad=True)
    ws, losses = [], []
    for _ in range(steps):
        loss = ((w * x - y) ** 2).mean()
        ws.append(w.item())
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
    return TrainResult(w.item(), ws, losses)
