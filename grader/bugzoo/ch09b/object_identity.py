"""The fingerprint hashes the storage address: a clone gets a new fingerprint."""

EXPECT = r"equal values|clone|identical"
SELECT = "fingerprint"


def fingerprint(obj):
    if isinstance(obj, torch.Tensor):
        return hashlib.sha256(str(obj.data_ptr()).encode()).hexdigest()
    return hashlib.sha256(str([fingerprint(v) for v in obj.values()]).encode()).hexdigest()
