"""serve warms the compiled model up on the first request before serving them all (its
output thrown away): right outputs within two compilations, but serving no request at all
reads a first request that is not there and raises."""

EXPECT = r"no request"
SELECT = "serve"
TASK = "ch09a.2"


def serve(model, requests, backend="eager"):
    compiled = torch.compile(model, backend=backend, dynamic=None)
    with torch.no_grad():
        compiled(requests[0])  # warm-up: compile before the first real request
        return [compiled(idx) for idx in requests]
