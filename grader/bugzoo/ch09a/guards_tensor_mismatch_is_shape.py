"""guard_reasons files every tensor guard that is not a dtype guard as "shape": a
requires_grad mismatch is reported as a shape change."""

EXPECT = r"other"
SELECT = "guard_reasons"


def _classify(text):
    body = re.sub(r"^\d+/\d+: ", "", text.strip())
    m = _TENSOR_GUARD.search(body)
    if m:
        return GuardReason(m.group(1), "dtype" if m.group(2) == "dtype" else "shape", text)
    m = _VALUE_GUARD.match(body)
    if m:
        return GuardReason(m.group(1), "value", text)
    return GuardReason("?", "other", text)
