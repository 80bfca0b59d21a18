"""time_loader rounds each batch's wait and compute time to the millisecond before adding
it up, so every sub-millisecond batch counts 0."""

EXPECT = r"rounding or truncating"
SELECT = "sub_millisecond"
EDITS = [
    ("            wait_s += got - asked\n", "            wait_s += round(got - asked, 3)\n"),
    ("            compute_s += asked - got\n", "            compute_s += round(asked - got, 3)\n"),
]
