"""last_weights is a registered buffer (so that it follows .to(device)): after a forward it is
a state_dict entry whose shape is that batch's, so a checkpoint saved after training does
not load into a new module, nor into one that ran on another length."""

EXPECT = r"load_state_dict|state_dict"
SELECT = "checkpoint_loads"
EDITS = [
    (
        "        self.last_weights: torch.Tensor | None = None\n",
        '        self.register_buffer("last_weights", None)\n',
    )
]
