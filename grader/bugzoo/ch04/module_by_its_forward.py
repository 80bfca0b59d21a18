"""Takes anything with a callable ``forward`` for a module (duck typing): a layer class kept
as configuration (self.norm_layer = nn.LayerNorm, as torchvision does) has one too, and is
reported as unregistered state although it is no module and holds no state."""

EXPECT = r"layer class|by the object's type"
SELECT = "unregistered_state"
TASK = "ch04.2"
EDITS = [
    (
        "    if isinstance(value, (nn.Module, Tensor)):\n",
        '    if isinstance(value, Tensor) or callable(getattr(value, "forward", None)):\n',
    )
]
