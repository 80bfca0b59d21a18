"""SmallCNN.forward flattens the features with x.reshape(x.size(0), -1), the classic idiom:
right for every batch that holds an image, in any memory layout, but a batch of no images
(B = 0) cannot size its -1 from no elements and raises, where the contract's forward maps
[B, in_channels, H, W] to [B, n_classes] for any B (flatten(1) keeps the batch axis as it is)."""

EXPECT = r"no images|B = 0|flatten\(1\)"
SELECT = "head_is_derived"
TASK = "ch06.3"

EDITS = [
    (
        "        return self.head(x.flatten(1))  # (B, 16*H'*W') -> (B, n_classes)\n",
        "        return self.head(x.reshape(x.size(0), -1))\n",
    )
]
