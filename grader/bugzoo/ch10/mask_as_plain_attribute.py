"""CausalSelfAttention keeps its mask as a plain tensor attribute instead of a buffer: it works
on the CPU, but .to('cuda') moves only parameters and buffers, so on a GPU the mask stays
behind and the forward fails."""

EXPECT = r"plain tensor attributes"
SELECT = "moves_with_the_layer"
EDITS = [
    (
        '        self.register_buffer("allowed", allowed, persistent=False)\n',
        "        self.allowed = allowed\n",
    )
]
