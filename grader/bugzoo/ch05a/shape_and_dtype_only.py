"""Only what PyTorch itself would complain about is checked (dtype): a float tensor of 0-255
pixels, swapped channels or raw statistics all pass."""

EXPECT = r"range|0-255"
SELECT = "contract or range or channel or normaliz"


def check_contract(batch, contract):
    if batch.dtype != contract.dtype:
        return [f"dtype: batch is {batch.dtype}, the model expects {contract.dtype}"]
    return []
