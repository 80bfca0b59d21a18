"""SmallCNN.forward returns its logits as float32 ("the loss wants float32"): a model moved
to float64 or half still runs, but its logits come back in another dtype than the model's,
rounded. The contract's forward is head(features(x).flatten(1)), with no conversion."""

EXPECT = r"keeps the model's dtype|fixed dtype"
SELECT = "head_of_the_flattened"
TASK = "ch06.3"

EDITS = [
    (
        "        return self.head(x.flatten(1))  # (B, 16*H'*W') -> (B, n_classes)\n",
        "        return self.head(x.flatten(1)).float()\n",
    )
]
