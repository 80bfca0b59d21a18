"""guard_reasons knows a Python value's guard by its ``name == value`` form, but tells a
tensor's guards apart by the first kind word anywhere in the text ("size" or "stride", then
"dtype"): a tensor whose name holds such a word (tensor 'x_size' dtype mismatch, tensor
'dtype_2' requires_grad mismatch) gets its name's kind, not the guard's."""

EXPECT = r"words of a text do not tell its kind"
SELECT = "kinds_by_the_guard"
TASK = "ch09a.4"


def _classify(text):
    body = re.sub(r"^\d+/\d+: ", "", text.strip())
    m = _TENSOR_GUARD.search(body) or _VALUE_GUARD.match(body)
    argument = m.group(1) if m else "?"
    if _VALUE_GUARD.match(body):
        kind = "value"
    elif "size" in body or "stride" in body:
        kind = "shape"
    elif "dtype" in body:
        kind = "dtype"
    else:
        kind = "other"
    return GuardReason(argument, kind, text)
