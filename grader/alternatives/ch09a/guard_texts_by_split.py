"""``guard_reasons`` keeps the first call's records and reads only what the second call added (no
clearing), and classifies each text by splitting strings instead of regular expressions; a tensor
rank change counts as a shape guard. It still reads Dynamo's own records, never the inputs.
"""

import torch
import torch._dynamo
from torch._dynamo.utils import guard_failures

_TENSOR_CHECKS = {"size": "shape", "stride": "shape", "rank": "shape", "dtype": "dtype"}


def _name_before_equals(left):
    """``n`` or ``L['n']`` -> ``n``; anything else (an item, a call) -> None."""
    left = left.strip()
    if left.startswith("L['") and left.endswith("']"):
        left = left[3:-2]
    return left if left.isidentifier() else None


def _reason_from_text(text):
    first_line = text.strip().splitlines()[0] if text.strip() else ""
    head, sep, rest = first_line.partition(": ")
    body = rest if sep and head.replace("/", "").isdigit() and "/" in head else first_line
    if body.startswith("tensor '"):
        name, _, after = body[len("tensor '") :].partition("'")
        words = after.split()
        if len(words) >= 2 and words[1].startswith("mismatch"):
            return GuardReason(name, _TENSOR_CHECKS.get(words[0], "other"), text)
    left, sep, _ = body.partition(" == ")
    if sep:
        name = _name_before_equals(left)
        if name is not None:
            return GuardReason(name, "value", text)
    return GuardReason("?", "other", text)


def guard_reasons(fn, first, second, **compile_kwargs):
    """Compile ``fn`` from a clean Dynamo cache on the call ``first`` (an argument tuple), then
    call it with ``second``.

    ``compile_kwargs`` go to ``torch.compile`` (``backend`` defaults to "eager"). Returns one
    ``GuardReason`` per guard that failed on the second call (empty when the compiled code was
    reused): which argument, and whether a shape, a dtype or a Python value.
    """
    settings = dict(compile_kwargs)
    chosen_backend = settings.pop("backend", "eager")
    first_args = first if isinstance(first, tuple) else (first,)
    second_args = second if isinstance(second, tuple) else (second,)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=chosen_backend, **settings)
    compiled(*first_args)
    seen = {key: len(texts) for key, texts in guard_failures.items()}
    compiled(*second_args)
    fresh = []
    for key, texts in guard_failures.items():
        fresh.extend(texts[seen.get(key, 0) :])
    torch._dynamo.reset()
    return [_reason_from_text(text) for text in fresh]
