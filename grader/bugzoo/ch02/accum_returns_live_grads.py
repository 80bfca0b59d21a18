"""The returned dict holds the .grad tensors themselves, not copies: the next backward or
zero_grad changes the 'returned' gradient behind the caller's back."""

EXPECT = r"copies"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    model.zero_grad(set_to_none=True)
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        if len(x_part):
            (loss_fn(model(x_part), y_part) * (len(x_part) / n)).backward()
    return {name: p.grad for name, p in model.named_parameters()}
