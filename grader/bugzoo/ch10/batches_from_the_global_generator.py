"""train_gpt calls batch_fn without a generator, so batches come from the global random
state: reproducible only because of the global seed, and not the generator the contract names."""

EXPECT = r"generator"
SELECT = "generator_seeded"


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
        x, y = batch_fn(train_data, block_size, batch_size)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        val = [model(*batch_fn(val_data, block_size, batch_size, gen))[1].item() for _ in range(8)]
    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)
