"""W.T is made contiguous once and kept per id(W): right on the first call, stale once
the caller changes W in place (as an optimizer step does)."""

EXPECT = r"edited in place|earlier call|first call saw"
SELECT = "between_calls"

_TRANSPOSED = {}


def batch_linear(x, W, b):
    key = (id(W), tuple(W.shape), W.dtype)
    if key not in _TRANSPOSED:
        _TRANSPOSED[key] = W.T.contiguous()
    return x @ _TRANSPOSED[key] + b
