"""fingerprint writes the shape as its sizes run together with no separator: (1, 11) and
(11, 1) both read "111", so same-byte tensors of those shapes share a digest."""

EXPECT = r"shape as a delimited tuple"
SELECT = "narrow_dtypes"

EDITS = [
    (
        '        h.update(f"T{t.dtype}{tuple(t.shape)}:".encode())',
        '        h.update((str(t.dtype) + "".join(str(s) for s in t.shape) + ":").encode())',
    ),
]
