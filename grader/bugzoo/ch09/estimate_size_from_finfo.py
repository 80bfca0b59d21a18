"""estimate_activation_mb takes the element size from torch.finfo(dtype).bits, which exists
for floating dtypes only: an integer dtype raises."""

EXPECT = r"torch\.finfo"
SELECT = "whole_domain"

EDITS = [
    (
        "    element = torch.empty((), dtype=dtype).element_size()",
        "    element = torch.finfo(dtype).bits // 8",
    ),
]
