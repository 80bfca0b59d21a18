"""generate re-seeds the generator it is given with its initial seed ("reproducible
sampling"): every call with one generator repeats the same tokens, and what the caller drew
from it before is ignored."""

EXPECT = r"continue it|never re-seed"
SELECT = "continues_the_generator"
EDITS = [
    (
        "    for _ in range(max_new_tokens):\n",
        "    if generator is not None:\n"
        "        generator.manual_seed(generator.initial_seed())\n"
        "    for _ in range(max_new_tokens):\n",
    )
]
