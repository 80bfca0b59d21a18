"""train_gpt seeds after building the model: the initial weights come from whatever the
global random state happened to be."""

EXPECT = r"seed"
SELECT = "seeded or deterministic"


def train_gpt(
    text,
    steps=300,
    block_size=32,
    batch_size=16,
    n_layer=2,
    n_head=4,
    n_embd=64,
    lr=3e-3,
    seed=0,
    batch_fn=None,
):
    batch_fn = batch_fn or get_batch
    tokenizer = CharTokenizer(text)
    data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    n_train = int(0.9 * len(data))
    train_data, val_data = data[:n_train], data[n_train:]
    model = GPT(tokenizer.vocab_size, block_size, n_layer, n_head, n_embd)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        x, y = batch_fn(train_data, block_size, batch_size, gen)
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        val = [model(*batch_fn(val_data, block_size, batch_size, gen))[1].item() for _ in range(8)]
    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)
