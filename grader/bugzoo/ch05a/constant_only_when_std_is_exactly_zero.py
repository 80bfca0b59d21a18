"""A channel counts as constant only when its float32 std is exactly 0: a constant channel
whose value float32 cannot hold (0.1, 0.7) has a rounding-noise std of ~1e-8, keeps it, and
apply divides by that noise."""

EXPECT = r"never varies|std 1"
SELECT = "constant"
EDITS = [("varies = x.amax(dim=1) > x.amin(dim=1)", "varies = std != 0")]
