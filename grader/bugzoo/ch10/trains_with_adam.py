"""train_gpt builds torch.optim.Adam instead of AdamW: the same normalized steps, but without
the decoupled weight decay (0.01 by default), so the losses differ only in late digits."""

EXPECT = r"decoupled weight decay"
SELECT = "adamw"
EDITS = [
    (
        "    opt = torch.optim.AdamW(model.parameters(), lr=lr)\n",
        "    opt = torch.optim.Adam(model.parameters(), lr=lr)\n",
    )
]
