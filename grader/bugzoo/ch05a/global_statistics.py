"""One mean and one std over the whole tensor instead of one per channel: channels with
different brightness keep their offsets."""

EXPECT = r"per channel|per-channel"
SELECT = "normalizer or apply"


def fit_normalizer(train_x):
    x = train_x.float()
    c = train_x.shape[1]
    return Normalizer(x.mean().repeat(c), x.std().repeat(c))
