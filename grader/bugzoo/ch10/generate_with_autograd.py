"""generate calls the model with autograd on: each step records a graph nobody uses."""

EXPECT = r"no_grad"
SELECT = "extends"


def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.block_size :])
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx
