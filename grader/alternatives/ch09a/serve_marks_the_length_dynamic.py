"""serve marks the sequence dimension of every request dynamic (torch._dynamo.mark_dynamic)
instead of compiling with dynamic=None: one of the repairs the reading names."""


def serve(model, requests, backend="eager"):
    compiled = torch.compile(model, backend=backend)
    outputs = []
    with torch.no_grad():
        for idx in requests:
            if idx.shape[1] >= 2:
                torch._dynamo.mark_dynamic(idx, 1)
            outputs.append(compiled(idx))
    return outputs
