"""The repaired loop never clears .grad after an update, so every step follows the sum of
all earlier gradients (a momentum nobody asked for)."""

EXPECT = r"clear .grad|that step.s gradient alone"
SELECT = "two_stage or table or feature_log or first_stage"


def two_stage_train(steps, lr):
    w1 = torch.tensor(W1_START, requires_grad=True)
    w2 = torch.tensor(W2_START, requires_grad=True)
    log, losses, w1s, w2s = [], [], [w1.item()], [w2.item()]
    for _ in range(steps):
        loss = ((w2 * first_stage(w1, X, log) - TARGET) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= lr * w1.grad
            w2 -= lr * w2.grad
        w1s.append(w1.item())
        w2s.append(w2.item())
    return TwoStageResult(w1.item(), w2.item(), losses, w1s, w2s, log)
