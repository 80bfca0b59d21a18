"""(held-out round 15) The whole loop body sits inside the try/except StopIteration that
watches next(): a StopIteration raised by consume itself (the caller's step calling next()
on an exhausted iterator of its own) is taken for the end of the data, and the timing ends
quietly after the batches before it."""

EXPECT = r"consume's exception to reach the caller"
SELECT = "none_or_falsy"
TASK = "ch05.1"
EDITS = [
    (
        """            try:
                batch = next(it)
            except StopIteration:  # the end of the data is not a batch we waited for
                break
            got = clock()
            wait_s += got - asked
            consume(batch)
            asked = clock()
            compute_s += asked - got
            batches += 1
""",
        """            try:
                batch = next(it)
                got = clock()
                wait_s += got - asked
                consume(batch)
                asked = clock()
                compute_s += asked - got
                batches += 1
            except StopIteration:  # the end of the data
                break
""",
    )
]
