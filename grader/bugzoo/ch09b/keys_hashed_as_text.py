"""Hashes a dict key as its text: the key 1 and the key '1' give one digest."""

EXPECT = r"different keys|with its type"
SELECT = "fingerprint"
EDITS = [
    (
        "        for key, value in obj.items():\n            _feed(h, key)\n",
        "        for key, value in obj.items():\n            _feed(h, str(key))\n",
    )
]
