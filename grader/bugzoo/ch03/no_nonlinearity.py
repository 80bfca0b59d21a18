"""The chapter's broken network: two linear layers with nothing between them, which
compose to one linear map and cannot separate the XOR quadrants."""

EXPECT = r"nonlinearity"


def mlp_forward(params, X):
    h = X @ params["W1"] + params["b1"]
    return h @ params["W2"] + params["b2"]
