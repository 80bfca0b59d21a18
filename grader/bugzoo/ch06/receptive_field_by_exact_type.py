"""receptive_field recognises a conv or pool by its exact class (type(layer) in ...), so a
subclass, such as the ParametrizedConv2d that weight_norm makes, counts as pointwise."""

EXPECT = r"isinstance"
SELECT = "subclassed"
EDITS = [
    (
        "        if not isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):\n",
        "        if type(layer) not in (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d):\n",
    )
]
