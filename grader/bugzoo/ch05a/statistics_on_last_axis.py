"""check_contract takes the statistics along the last axis (thinking channels-last): with
C == H == W the shapes agree, so correct batches are flagged and NHWC ones pass."""

EXPECT = r"dim 1|correctly prepared|no violations"
SELECT = "contract or correct or channel"


def check_contract(batch, contract):
    found = []
    if batch.dtype != contract.dtype:
        found.append(f"dtype: batch is {batch.dtype}, the model expects {contract.dtype}")
    x = batch.detach().float()
    lo, hi = contract.value_range
    if x.min().item() < lo or x.max().item() > hi:
        found.append("range: values outside the contract")
    mean, std = _channel_stats(x, x.dim() - 1)
    if _channel_order(mean, std, contract) != list(range(len(mean))):
        found.append("normalization: channel statistics do not match")
    return found
