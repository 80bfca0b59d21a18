"""fingerprint hashes bottom-up (a Merkle tree): a tensor's digest covers its dtype, shape
and bytes, and a container's digest covers its kind, its length and its children's
digests (a dict's keys hashed with their type). Equal values give equal digests and any
change anywhere changes the root, as a flat stream does."""


def _digest(obj) -> bytes:
    h = hashlib.sha256()
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(b"tensor" + str(t.dtype).encode() + repr(tuple(t.shape)).encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, Mapping):
        h.update(b"dict%d" % len(obj))
        for key, value in obj.items():
            h.update(_digest(key) + _digest(value))
    elif isinstance(obj, (list, tuple)):
        h.update(b"seq%d" % len(obj))
        for item in obj:
            h.update(_digest(item))
    elif isinstance(obj, (str, bool, int, float)) or obj is None:
        h.update(f"{type(obj).__name__}:{obj!r}".encode())
    else:
        raise TypeError(f"fingerprint cannot hash a {type(obj).__name__}")
    return h.digest()


def fingerprint(obj):
    return _digest(obj).hex()
