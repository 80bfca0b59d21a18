"""Validation scores consecutive windows of val_data with its own next-token targets and
never calls batch_fn: a broken batch function then fools training but not validation."""

EXPECT = r"validation"
SELECT = "copy_targets or split"


def train_gpt(
    text: str,
    steps: int = 300,
    block_size: int = 32,
    batch_size: int = 16,
    n_layer: int = 2,
    n_head: int = 4,
    n_embd: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    batch_fn: Callable | None = None,
) -> TrainResult:
    """Train a GPT on ``text`` (first 90% train, last 10% validation) with AdamW.

    ``batch_fn`` (default ``get_batch``) makes every batch, for training and validation;
    ``val_loss`` is the mean loss over 8 validation batches drawn after training.
    Deterministic for a given seed.
    """
    batch_fn = batch_fn or get_batch
    tokenizer = CharTokenizer(text)
    data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    n_train = int(0.9 * len(data))
    train_data, val_data = data[:n_train], data[n_train:]
    torch.manual_seed(seed)
    model = GPT(tokenizer.vocab_size, block_size, n_layer, n_head, n_embd)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    for _ in range(steps):
        x, y = batch_fn(train_data, block_size, batch_size, gen)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        n = (len(val_data) - 1) // block_size
        xv = val_data[: n * block_size].view(n, block_size)
        yv = val_data[1 : n * block_size + 1].view(n, block_size)
        val = [model(xv, yv)[1].item()]
    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)
