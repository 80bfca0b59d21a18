"""generate feeds the whole sequence so far: past block_size tokens the model has no
position embedding for it."""

EXPECT = r"crop"
SELECT = "generat or own_last"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx)
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx
