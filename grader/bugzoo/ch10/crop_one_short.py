"""generate crops the context to block_size - 1 tokens (an off-by-one in the slice): it
runs, but the model never sees the oldest token it was trained to use."""

EXPECT = r"block_size tokens|context|window"
SELECT = "last_block_size or generat"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -(model.block_size - 1) :])
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx
