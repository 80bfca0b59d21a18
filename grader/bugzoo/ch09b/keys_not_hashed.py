"""The fingerprint of a dict hashes its values only: a renamed state-dict key keeps the digest."""

EXPECT = r"key"
SELECT = "fingerprint"


def fingerprint(obj) -> str:
    h = hashlib.sha256()
    _feed(h, list(obj.values()) if isinstance(obj, Mapping) else obj)
    return h.hexdigest()
