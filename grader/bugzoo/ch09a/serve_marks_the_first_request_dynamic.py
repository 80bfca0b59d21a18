"""serve marks the length of the first request dynamic (torch._dynamo.mark_dynamic) so the
first compilation is already symbolic in T: one graph for every length, but a call with no
request indexes a first request that is not there and raises."""

EXPECT = r"no request"
SELECT = "serve"
TASK = "ch09a.2"


def serve(model, requests, backend="eager"):
    compiled = torch.compile(model, backend=backend)
    torch._dynamo.mark_dynamic(requests[0], 1)
    with torch.no_grad():
        return [compiled(idx) for idx in requests]
