"""The fingerprint hashes the raw bytes only: same bytes in another dtype or shape look identical."""

EXPECT = r"dtype|shape"
SELECT = "fingerprint"


def fingerprint(obj):
    h = hashlib.sha256()

    def feed(o):
        if isinstance(o, torch.Tensor):
            h.update(o.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(o, Mapping):
            for k, v in o.items():
                h.update(str(k).encode())
                feed(v)
        else:
            for item in o:
                feed(item)

    feed(obj)
    return h.hexdigest()
