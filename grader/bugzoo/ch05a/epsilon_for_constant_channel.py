"""A constant channel is 'protected' with std + 1e-8 instead of std 1: training data comes
out as 0, but any later deviation in that channel is multiplied by 10^8."""

EXPECT = r"zero spread|std 1"
SELECT = "normalizer or apply or constant"


def fit_normalizer(train_x):
    x = train_x.float().transpose(0, 1).reshape(train_x.shape[1], -1)
    return Normalizer(x.mean(dim=1), x.std(dim=1) + 1e-8)
