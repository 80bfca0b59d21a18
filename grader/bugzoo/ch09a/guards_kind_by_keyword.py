"""guard_reasons classifies a guard by substring tests on its whole text ("size" or "stride"
anywhere: shape). A Python value's guard quotes the traced source line, the file and the
function (k == 2  # return x.size(0) * k + x), so a value guard reads as "shape" (held-out
round 8)."""

EXPECT = r"words of a text do not tell its kind"
SELECT = "kinds_by_the_guard"
TASK = "ch09a.4"


def _classify(text):
    body = re.sub(r"^\d+/\d+: ", "", text.strip())
    m = _TENSOR_GUARD.search(body) or _VALUE_GUARD.match(body)
    argument = m.group(1) if m else "?"
    if "size" in body or "stride" in body:
        kind = "shape"
    elif "dtype" in body:
        kind = "dtype"
    elif _VALUE_GUARD.match(body):
        kind = "value"
    else:
        kind = "other"
    return GuardReason(argument, kind, text)
