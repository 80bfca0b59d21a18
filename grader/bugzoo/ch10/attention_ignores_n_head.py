"""One head of size n_embd whatever n_head says, scaled by 1/sqrt(n_embd // n_head):
causal and the right shape, but the heads never attend separately."""

EXPECT = r"head"
SELECT = "attention"
EDITS = [
    ("        H = self.n_head\n", "        H = 1\n"),
    ("math.sqrt(C // H)", "math.sqrt(C // self.n_head)"),
]
