"""generate always takes the most likely token: reproducible, but it never samples."""

EXPECT = r"sampl"
SELECT = "generat or greedy or own_last"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -model.block_size :])
        idx = torch.cat([idx, logits[:, -1, :].argmax(-1, keepdim=True)], dim=1)
    return idx
