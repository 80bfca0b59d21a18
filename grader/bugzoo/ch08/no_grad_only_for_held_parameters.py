"""no_grad read as a finding about the parameters the optimizer trains: a trainable
parameter left out of the optimizer that backward never reaches is reported only as
not_in_optimizer. The contract's no_grad is every trainable parameter of the model whose
.grad stays None, held or not."""

EXPECT = r"no_grad missing.*whether or not the optimizer holds"
SELECT = "no_grad_means"
TASK = "ch08.2"
EDITS = [
    (
        "            if p.requires_grad and n not in got_grad:\n",
        "            if p.requires_grad and n not in got_grad and id(p) in held_ids:\n",
    )
]
