"""The loss sums the squared errors, so the step is N times too large."""

EXPECT = r"sum.*squared errors"


def train_scalar(xs, targets, w0, lr, steps):
    x = torch.as_tensor(xs, dtype=torch.float32)
    y = torch.as_tensor(targets, dtype=torch.float32)
    w = torch.tensor(float(w0), requires_grad=True)
    ws, losses = [], []
    for _ in range(steps):
        loss = ((w * x - y) ** 2).sum()
        ws.append(w.item())
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad.zero_()
    return TrainResult(w.item(), ws, losses)
