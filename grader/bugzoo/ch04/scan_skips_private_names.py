"""Skips every attribute whose name starts with an underscore, as if all were nn.Module's
own: a cache kept in self._cache is never reported."""

EXPECT = r"underscore|_MODULE_INTERNALS"
SELECT = "unregistered or underscore"
EDITS = [
    (
        "            if name in _MODULE_INTERNALS:\n",
        "            if name in _MODULE_INTERNALS or name.startswith('_'):\n",
    )
]
