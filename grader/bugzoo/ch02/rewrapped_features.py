"""The features are re-wrapped into a fresh tensor that requires grad: the gradient stops
at the new leaf and never reaches w1."""

EXPECT = r"w1"
SELECT = "two_stage or table or feature_log or first_stage"


def first_stage(w1, x, log):
    features = torch.tensor((w1 * x).tolist(), requires_grad=True)
    log.append(features.detach())
    return features
