"""generate samples from the logits of the first position of the context, not the last."""

EXPECT = r"last (prompt )?position"
SELECT = "generat or greedy or own_last"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.block_size :])
        probs = F.softmax(logits[:, 0, :] / temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx
