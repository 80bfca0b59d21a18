"""The fingerprint hashes str(tensor): printing rounds to 4 digits and elides large tensors."""

EXPECT = r"value|str\(tensor\)"
SELECT = "fingerprint"


def fingerprint(obj):
    if isinstance(obj, Mapping):
        text = repr({k: str(v) for k, v in obj.items()})
    else:
        text = str(obj)
    return hashlib.sha256(text.encode()).hexdigest()
