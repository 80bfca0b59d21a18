"""generate feeds the model only the last token (a bigram habit): the prompt's context
never reaches the prediction, and nothing ever exceeds block_size, so nothing crashes."""

EXPECT = r"block_size tokens|context|window"
SELECT = "last_block_size or generat"


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    for _ in range(max_new_tokens):
        logits, _ = model(idx[:, -1:])
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx
