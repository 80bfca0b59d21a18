"""Any mismatch of the channel statistics is called a normalization problem: a BGR or
channels-last batch is 'unnormalized', and the real cause is never named."""

EXPECT = r"channel order"
SELECT = "contract or channel or correct"


def check_contract(batch, contract):
    found = []
    if batch.dtype != contract.dtype:
        found.append(f"dtype: batch is {batch.dtype}, the model expects {contract.dtype}")
    x = batch.detach().float()
    lo, hi = contract.value_range
    if x.min().item() < lo or x.max().item() > hi:
        found.append("range: values outside the contract")
    mean, std = _channel_stats(x, 1)
    if _channel_order(mean, std, contract) != list(range(len(mean))):
        found.append("normalization: channel statistics do not match")
    return found
