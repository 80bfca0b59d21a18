"""seed_worker keeps NumPy's seed "small" with % 256: runs of different loaders soon share
NumPy streams, because only 256 seeds remain."""

EXPECT = r"different first draws"
SELECT = "whole_worker_seed"

EDITS = [("np.random.seed(seed % 2**32)", "np.random.seed(seed % 256)")]
