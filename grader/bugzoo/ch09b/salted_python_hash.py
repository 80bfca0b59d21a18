"""The fingerprint is built on Python's hash() of the bytes: equal within one process, but
str and bytes hashes are salted per process, so no two runs agree."""

EXPECT = r"hash"
SELECT = "hash"


def fingerprint(obj):
    parts = []

    def feed(o):
        if isinstance(o, torch.Tensor):
            t = o.detach().contiguous()
            raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
            parts.append(f"{t.dtype}{tuple(t.shape)}{hash(raw)}")
        elif isinstance(o, Mapping):
            for k, v in o.items():
                parts.append(repr(k))
                feed(v)
        else:
            parts.append("[")
            for item in o:
                feed(item)
            parts.append("]")

    feed(obj)
    return format(hash(tuple(parts)) & (2**64 - 1), "016x")
