"""fingerprint hashes a dict's tensor (and container) entries only, skipping the Python values
beside them ("a state dict is its tensors"), so an optimizer state dict whose lr, 'foreach'
flag or betas changed keeps its digest."""

EXPECT = r"one value inside changed"
SELECT = "nested_containers"
TASK = "ch09b.1"

EDITS = [
    (
        "        for key, value in obj.items():\n            _feed(h, key)\n",
        "        for key, value in obj.items():\n"
        "            if not isinstance(value, (torch.Tensor, Mapping, list, tuple)):\n"
        "                continue\n"
        "            _feed(h, key)\n",
    )
]
