"""Random constructors are taken for cuts: rand_like, randn_like and randint_like "make new
numbers", so they are reported although, like zeros_like, they read only the input's shape
and hold none of its values (noise added to a weight stays on the graph)."""

EXPECT = r"random ones included"
SELECT = "generated_programs"
TASK = "ch02.2"
EDITS = [
    (
        '    return name.endswith("_like") or name.startswith("new_") or name in ("grad", "_grad")\n',
        "    return (\n"
        '        (name.endswith("_like") and not name.startswith("rand"))\n'
        '        or name.startswith("new_")\n'
        '        or name in ("grad", "_grad")\n'
        "    )\n",
    )
]
