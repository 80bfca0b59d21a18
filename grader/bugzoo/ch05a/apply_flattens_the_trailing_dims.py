"""Normalizer.apply flattens every trailing dim with x.reshape(N, C, -1), normalizes that
(N, C, L) view with statistics shaped (1, C, 1) and reshapes back: right on every batch that
holds an image, but a batch of no images (N = 0, an empty last or validation batch) cannot be
reshaped with a -1 (0 elements fit any size), so apply raises where the contract's (x - mean)
/ std of an (N, C, ...) x returns the empty float32 batch of x's shape."""

EXPECT = r"no images|empty|N = 0"
SELECT = "statistics_match"
TASK = "ch05a.1"

EDITS = [
    (
        "        shape = (1, -1) + (1,) * (x.dim() - 2)  # broadcast over N and the trailing dims\n"
        "        return (x.float() - self.mean.view(shape)) / self.std.view(shape)\n",
        "        flat = x.float().reshape(x.shape[0], x.shape[1], -1)  # (N, C, L)\n"
        "        out = (flat - self.mean.view(1, -1, 1)) / self.std.view(1, -1, 1)\n"
        "        return out.reshape(x.shape)\n",
    )
]
