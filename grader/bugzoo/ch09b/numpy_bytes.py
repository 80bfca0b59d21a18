"""The fingerprint reads bytes with .numpy(): a tensor that requires grad raises, and
bfloat16 has no numpy dtype."""

EXPECT = r"requires grad|narrow dtype|raised"
SELECT = "fingerprint"


def _feed(h, obj) -> None:
    if isinstance(obj, torch.Tensor):
        h.update(f"T{obj.dtype}{tuple(obj.shape)}:".encode())
        h.update(obj.contiguous().numpy().tobytes())
    elif isinstance(obj, Mapping):
        h.update(f"M{len(obj)}:".encode())
        for key, value in obj.items():
            _feed(h, key)
            _feed(h, value)
    elif isinstance(obj, (list, tuple)):
        h.update(f"L{len(obj)}:".encode())
        for item in obj:
            _feed(h, item)
    else:
        h.update(repr(obj).encode())
