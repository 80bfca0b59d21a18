"""The range is checked as min < lo or max > hi: a nan makes both comparisons False, so a
batch holding nan passes the range check."""

EXPECT = r"nan|non-finite"
SELECT = "range or finite"

_full_check = check_contract


def check_contract(batch, contract):
    found = [v for v in _full_check(batch, contract) if not v.startswith("range")]
    x = batch.detach().float()
    lo, hi = contract.value_range
    if x.min().item() < lo or x.max().item() > hi:
        found.insert(1 if found and found[0].startswith("dtype") else 0, "range: out of range")
    return found
