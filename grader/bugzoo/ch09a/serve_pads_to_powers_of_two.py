"""serve buckets lengths to the next power of two (padding on the right): correct outputs,
but the book's lengths 5..35 still need four graphs (8, 16, 32, 64)."""

EXPECT = r"compil"
SELECT = "serve"


def serve(model, requests, backend="eager"):
    compiled = torch.compile(model, backend=backend, dynamic=False)
    outputs = []
    with torch.no_grad():
        for idx in requests:
            t = idx.shape[1]
            bucket = 1 << (t - 1).bit_length()
            padded = torch.nn.functional.pad(idx, (0, bucket - t))  # (B, bucket)
            outputs.append(compiled(padded)[:, :t])
    return outputs
