"""first_stage keeps its product per (id(w1), id(x)) to save work: after the caller changes
w1 in place (an SGD step) it hands back a copy of the old product."""

EXPECT = r"earlier call|between calls|edited in place"
SELECT = "first_stage_follows"

_PRODUCTS = {}


def first_stage(w1, x, log):
    key = (id(w1), id(x))
    if key not in _PRODUCTS:
        _PRODUCTS[key] = w1 * x
    features = _PRODUCTS[key].clone()  # a fresh tensor each call, still on w1's graph
    log.append(features.detach())
    return features
