"""Nucleus (top-p 0.9) sampling: draws only from the most likely tokens that together
hold 90% of the probability, so the least likely tokens are never generated."""

EXPECT = r"whole vocabulary|top-k|top-p|every token|full softmax"
SELECT = "generat or sample"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.block_size :])
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
        sorted_p, order = probs.sort(dim=-1, descending=True)
        before = sorted_p.cumsum(-1) - sorted_p  # mass of the more likely tokens
        sorted_p = torch.where(before < 0.9, sorted_p, torch.zeros_like(sorted_p))
        pick = torch.multinomial(sorted_p, 1, generator=generator)
        idx = torch.cat([idx, order.gather(1, pick)], dim=1)
    return idx
