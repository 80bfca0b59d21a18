"""The blocks live in a plain Python list: PyTorch never registers them, so they are
missing from parameters() and from the state_dict."""

EXPECT = r"regist"
SELECT = "checkpoint or registered"
TASK = "ch10.6"  # the GPT holds the blocks, not generate or the checkpoint code


class GPT(GPT):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__(vocab_size, block_size, n_layer, n_head, n_embd)
        blocks = list(self.blocks)
        del self.blocks  # unregister the ModuleList ...
        self.blocks = blocks  # ... and keep a plain list, as the broken program does
