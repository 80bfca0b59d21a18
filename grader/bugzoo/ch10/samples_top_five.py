"""Samples only among the 5 most likely tokens (a silent top-k): with a vocabulary of 4
or 5 this is the full distribution, with 56 characters it never draws the other 51."""

EXPECT = r"whole vocabulary|top-k|every token|full softmax"
SELECT = "generat or sample"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.block_size :])
        logits = logits[:, -1, :] / temperature
        top, where = logits.topk(min(5, logits.shape[-1]), dim=-1)
        pick = torch.multinomial(F.softmax(top, dim=-1), 1, generator=generator)
        idx = torch.cat([idx, where.gather(1, pick)], dim=1)
    return idx
