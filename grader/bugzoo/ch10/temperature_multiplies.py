"""The logits are multiplied by the temperature instead of divided: low temperatures
flatten the distribution instead of sharpening it."""

EXPECT = r"temperature"
SELECT = "generat or greedy or own_last"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.block_size :])
        probs = F.softmax(logits[:, -1, :] * temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx
