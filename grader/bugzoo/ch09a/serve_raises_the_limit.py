"""serve silences the recompile_limit warning by raising the limit: nothing falls back to
eager any more, but every new length still compiles its own graph."""

EXPECT = r"compil"
SELECT = "serve"


def serve(model, requests, backend="eager"):
    compiled = torch.compile(model, backend=backend, dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=64), torch.no_grad():
        return [compiled(idx) for idx in requests]
