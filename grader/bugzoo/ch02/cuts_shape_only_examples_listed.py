"""Only the shape-only constructors the reading names (and their ones twins) are let
through: an allow-list of zeros_like, ones_like, new_zeros and new_ones instead of the rule
"constructors that read only an input's shape", so empty_like, full_like, randn_like or
new_full on a tensor that requires grad are reported as cuts (held-out round 8)."""

EXPECT = r"random ones included"
SELECT = "generated_programs"
TASK = "ch02.2"
EDITS = [
    (
        '    return name.endswith("_like") or name.startswith("new_") or name in ("grad", "_grad")\n',
        '    return name in ("zeros_like", "ones_like", "new_zeros", "new_ones", "grad", "_grad")\n',
    )
]
