"""compare_runs treats two losses as equal when == says so or both are nan: nan is handled,
but 0.0 and -0.0 (different bits) count as the same loss, so the comparison is not bitwise."""

EXPECT = r"-0\.0"
SELECT = "bitwise"
EDITS = [
    (
        '    return struct.pack("<d", a) == struct.pack("<d", b)  # bitwise: nan equals nan\n',
        "    return a == b or (math.isnan(a) and math.isnan(b))\n",
    )
]
