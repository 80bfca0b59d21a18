"""serve makes T dynamic but compiles with a hard-coded "eager" backend, ignoring the one
it was given."""

EXPECT = r"backend"
SELECT = "serve"


def serve(model, requests, backend="eager"):
    compiled = torch.compile(model, backend="eager", dynamic=None)
    with torch.no_grad():
        return [compiled(idx) for idx in requests]
