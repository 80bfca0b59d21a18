"""The fingerprint hashes the tensor's whole storage: a transposed view and its contiguous
copy (same values, same shape) get different digests, and so would a slice of a big tensor."""

EXPECT = r"storage|layout|transposed"
SELECT = "fingerprint"


def _feed(h, obj) -> None:
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        h.update(f"T{t.dtype}{tuple(t.shape)}:".encode())
        h.update(bytes(t.untyped_storage()))
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            _feed(h, key)
            _feed(h, value)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _feed(h, item)
    else:
        h.update(repr(obj).encode())
