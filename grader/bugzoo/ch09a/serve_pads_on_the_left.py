"""serve pads every request to the longest one, but on the left: the causal running mean
now averages pad tokens into every position, so outputs differ from eager."""

EXPECT = r"pad|eager"
SELECT = "serve"


def serve(model, requests, backend="eager"):
    longest = max(idx.shape[1] for idx in requests)
    compiled = torch.compile(model, backend=backend, dynamic=False)
    outputs = []
    with torch.no_grad():
        for idx in requests:
            t = idx.shape[1]
            padded = torch.nn.functional.pad(idx, (longest - t, 0))  # (B, longest)
            outputs.append(compiled(padded)[:, longest - t :])
    return outputs
