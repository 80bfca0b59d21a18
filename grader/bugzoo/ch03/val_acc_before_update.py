"""train_mlp measures the validation accuracy before the update instead of after it, so
val_acc[k] describes the model of step k - 1."""

EXPECT = r"after update k|after the last update"
SELECT = "train or history or xor"


def train_mlp(data, hidden=16, lr=0.5, steps=500, seed=1, forward=None):
    forward = forward or mlp_forward
    params = init_mlp(data.X_train.shape[1], hidden, 2, torch.Generator().manual_seed(seed))
    train_loss, val_acc = [], []
    for _ in range(steps):
        for p in params.values():
            p.grad = None
        val_acc.append(accuracy(params, data.X_val, data.y_val, forward))
        loss = cross_entropy(forward(params, data.X_train), data.y_train)
        loss.backward()
        sgd_step(params, lr)
        train_loss.append(loss.item())
    return History(params, train_loss, val_acc)
